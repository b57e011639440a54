// 100,000 runs in one INSERT … SELECT generate_series (PostgreSQL), for the plans test of run
// filters and the filtered-list benchmark: five principals (the development principal first),
// 2,000 conversations, 50 workspaces (a quarter of the runs in none), statuses, agents, tags
// (40 topics, 7 teams, 1 in 97 "urgent") and metadata ({ticket, team}), one run every 20 seconds
// back from now. Then ANALYZE, as autovacuum would. The session skips triggers while it seeds: the
// run-list change log (runsChanged) has nothing to say of runs no subscriber saw change.
export const SEEDED_RUNS = 100_000;

export function seedRunsSql(runs = SEEDED_RUNS): string {
  return `
  SET session_replication_role = replica;
  INSERT INTO principal (id, name) SELECT 'p' || n, 'Principal ' || n FROM generate_series(1, 4) n ON CONFLICT DO NOTHING;
  INSERT INTO conversation (id, owner_id, title)
    SELECT 'c' || n, CASE n % 5 WHEN 0 THEN 'development' ELSE 'p' || (n % 5) END, 'c' FROM generate_series(0, 1999) n;
  INSERT INTO run (id, owner_id, conversation_id, workspace_id, agent, question, status, max_turns, token_budget, deadline_seconds,
                   deadline_at, configuration, tags, metadata, metadata_pairs, created_at)
  SELECT 'r' || i, CASE i % 5 WHEN 0 THEN 'development' ELSE 'p' || (i % 5) END, 'c' || (i % 2000),
         CASE WHEN i % 4 = 0 THEN NULL ELSE 'w' || (i % 50) END,
         CASE WHEN i % 10 = 0 THEN 'analyst' ELSE 'researcher' END, 'q',
         (CASE i % 20 WHEN 0 THEN 'RUNNING' WHEN 1 THEN 'QUEUED' WHEN 2 THEN 'FAILED' WHEN 3 THEN 'CANCELLED' WHEN 4 THEN 'WAITING' ELSE 'SUCCEEDED' END)::"RunStatus",
         20, 1000, 60, now(), '{}',
         ARRAY['topic' || (i % 40), 'team' || (i % 7)] || CASE WHEN i % 97 = 0 THEN ARRAY['urgent'] ELSE ARRAY[]::text[] END,
         jsonb_build_object('ticket', 'T-' || i, 'team', 'team' || (i % 7)),
         ARRAY['ticket' || chr(31) || 'T-' || i, 'team' || chr(31) || 'team' || (i % 7)],
         now() - i * interval '20 seconds'
  FROM generate_series(1, ${runs}) i;
  SET session_replication_role = origin;
  ANALYZE principal; ANALYZE conversation; ANALYZE run;`;
}
