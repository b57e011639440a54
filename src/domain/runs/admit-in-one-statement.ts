// Run admission as one SQL statement (W4, W5), for admissions that name no conversation — the
// common case: a new run in a new conversation, perhaps in a workspace, with materials and an
// idempotency key. Every check is a condition of the inserts in the same statement, so there is
// no transaction to hold open across round trips and a workspace's share lock lasts one statement:
//
//   ws        the workspace, open and the caller's, held FOR SHARE with its current goal version
//             (a goal update, archive or delete waits for the statement, and it for them);
//   found     the materials, exact versions of the caller's publications (an access token that
//             names materials is admitted by the transactional path, which checks them against its grants);
//   checks    one row when the workspace, every material and the publication the run continues
//             (if any, the caller's) were found;
//   queue     the principal's queued-run count, locked, one row when it is below the limit, and for an
//             access token's run its tokens' count below their share and then its end user's count,
//             locked, below the end user's (queue-gate.ts);
//   claim     the idempotency key, claimed (or an expired one reclaimed) only if the checks passed
//             and the queue has room;
//   inserts   conversation, run, its materials and its link to the workspace, only if claimed.
//
// The run's agent profile version is resolved before (once per instance) and is a parameter here.
//
// When something is missing nothing is written and the caller runs the transactional admission,
// which says why with a typed error (or finds the workspace restored in the meantime). When the key
// is held by an earlier admission, nothing is written and the caller answers as that one did. When
// the principal's queue is full, nothing is written: the caller answers as an earlier admission with
// the key did, if any, or refuses with a QueueFullError.
import { randomUUID } from "node:crypto";
import { Prisma, type Principal, type PrismaClient, type Run, type Workspace } from "../../generated/prisma/client.js";
import { queryRows } from "../../db/direct-statements.js";
import { type AdmittedRelations, type AdmittedRun, CONVERSATION_RETURNING, relationsSql, WORKSPACE_SELECT, withRelations } from "./admitted-run-relations.js";
import { metadataPairs } from "./run-labels.js";
import { endUserGateSql, endUserQueueShare, queueGateSql, tokenQueueShare, tokensQueuedSql } from "./queue-gate.js";
import { conversationTitle } from "../text/whole-characters.js";

export type OneStatementAdmission = {
  ownerId: string;
  runId: string;
  workspaceId: string | null;
  agent: string;
  /** The agent profile version the run executes. */
  agentProfileId: string;
  question: string;
  limits: { maxTurns: number; tokenBudget: number; deadlineSeconds: number; maxCost?: string; confirmCostAbove?: string };
  /** Orders the run among its owner's queued runs (higher first). */
  priority: number;
  /** Distinct tags in order, and flat string metadata (run-labels.ts). */
  tags: string[];
  metadata: Record<string, string>;
  /** Publication versions in order, without duplicates. */
  materials: { publicationId: string; version: number }[];
  /** The caller's publication the run's answer is published as the next version of; null: a new one. */
  continuesPublicationId?: string | null;
  /** The access token admitting the run and the workspaces it may READ (material-reach.ts); null and none for a whole principal. */
  admittedByToken: string | null;
  tokenReadableWorkspaceIds: string[];
  /** The end user the token admits the run for (Run.admittedFor); null for a whole principal. */
  admittedFor?: string | null;
  /** `scope`: whose of the principal's keys it is ("" its API keys', or an access token's grants': idempotency-scope.ts). */
  idempotency: { scope: string; key: string; fingerprint: string; expiresAt: Date } | null;
  /** The most runs the principal may have QUEUED (MAX_QUEUED_RUNS_PER_PRINCIPAL). */
  maxQueuedRuns: number;
  now: Date;
  /** The relations the answer needs, given back by the same statement (admitted-run-relations.ts). */
  relations?: AdmittedRelations;
};

export type OneStatementOutcome =
  | { kind: "admitted"; run: AdmittedRun }
  | { kind: "key-taken" }
  | { kind: "checks-failed" }
  /**
   * `tokensQueued`: the runs the principal's access tokens have queued, read in the statement's
   * snapshot; `endUserFull`: the principal's gate passed, the end user's did not.
   */
  | { kind: "queue-full"; tokensQueued: unknown; endUserFull: boolean };

/**
 * The run's columns under the names of Prisma's Run model (a test compares the result with
 * prisma.run.findUnique). Every field of the model must be named: a column added to `run` and
 * not here fails to compile, instead of coming back missing from admission and tag updates.
 */
const RUN_COLUMNS: { [Field in keyof Run]-?: string } = {
  id: "id",
  ownerId: "owner_id",
  conversationId: "conversation_id",
  workspaceId: "workspace_id",
  agent: "agent",
  agentProfileId: "agent_profile_id",
  question: "question",
  status: "status",
  maxTurns: "max_turns",
  tokenBudget: "token_budget",
  deadlineSeconds: "deadline_seconds",
  deadlineAt: "deadline_at",
  goalVersionId: "goal_version_id",
  goalVersionNo: "goal_version_no",
  goalStatement: "goal_statement",
  configuration: "configuration",
  answer: "answer",
  answerPartial: "answer_partial",
  concludedEarly: "concluded_early",
  stopMode: "stop_mode",
  stopRequestedAt: "stop_requested_at",
  stopRequestedBy: "stop_requested_by",
  failureReason: "failure_reason",
  stopReason: "stop_reason",
  maxCost: "max_cost",
  confirmCostAbove: "confirm_cost_above",
  createdAt: "created_at",
  startedAt: "started_at",
  finishedAt: "finished_at",
  leaseOwner: "lease_owner",
  leaseExpiresAt: "lease_expires_at",
  attempt: "attempt",
  modelLabel: "model_label",
  tokensUsed: "tokens_used",
  cost: "cost",
  costUnpriced: "cost_unpriced",
  checkpointRevisionSeen: "checkpoint_revision_seen",
  priority: "priority",
  pauseRequestedAt: "pause_requested_at",
  pausedAt: "paused_at",
  tags: "tags",
  metadata: "metadata",
  metadataPairs: "metadata_pairs",
  scheduleId: "schedule_id",
  fireTime: "fire_time",
  continuesPublicationId: "continues_publication_id",
  admittedByToken: "admitted_by_token",
  admittedFor: "admitted_for",
  tokenReadableWorkspaceIds: "token_readable_workspace_ids",
};

/** A RETURNING list giving back the run under the names of Prisma's Run model; `table` qualifies its columns. */
export const runReturning = (table?: string) =>
  Object.entries(RUN_COLUMNS)
    .map(([field, column]) => `${table ? `${table}.` : ""}"${column}" AS "${field}"`)
    .join(", ");

export const RUN_RETURNING = runReturning();

/** A model's Decimal fields: a Decimal column added to a model and not listed below fails to compile. */
type DecimalFields<Model> = { [Field in keyof Model]-?: NonNullable<Model[Field]> extends Prisma.Decimal ? Field : never }[keyof Model];
const RUN_DECIMALS: Record<DecimalFields<Run>, true> = { maxCost: true, confirmCostAbove: true, cost: true };
const PRINCIPAL_DECIMALS: Record<DecimalFields<Principal>, true> = { dailyCostLimit: true };
const WORKSPACE_DECIMALS: Record<DecimalFields<Workspace>, true> = { monthlyBudget: true };

/**
 * The columns of the statement's row that Prisma's models hold as Decimal (the run's, its
 * principal's and its workspace's, under their prefixes): the driver gives PostgreSQL's numeric as text.
 */
const DECIMALS = [
  ...Object.keys(RUN_DECIMALS),
  ...Object.keys(PRINCIPAL_DECIMALS).map((field) => `o.${field}`),
  ...Object.keys(WORKSPACE_DECIMALS).map((field) => `w.${field}`),
];

export async function admitInOneStatement(prisma: PrismaClient, a: OneStatementAdmission): Promise<OneStatementOutcome> {
  const params: unknown[] = [];
  const p = (value: unknown) => `$${params.push(value)}`;
  const owner = p(a.ownerId);
  const now = p(a.now);
  const relations: AdmittedRelations = { ...a.relations, liveWorkspace: Boolean(a.relations?.liveWorkspace && a.workspaceId) };
  const related = relationsSql(relations);

  const ws = a.workspaceId
    ? `SELECT w.id, g.id AS goal_id, g.version AS goal_no, g.statement AS goal_statement${relations.liveWorkspace ? `, ${WORKSPACE_SELECT}` : ""}
         FROM workspace w JOIN goal_version g ON g.workspace_id = w.id AND g.version = w.goal_version
        WHERE w.id = ${p(a.workspaceId)} AND w.owner_id = ${owner} AND w.deleted_at IS NULL AND w.status = 'ACTIVE'
        FOR SHARE OF w`
    : `SELECT NULL::text AS id, NULL::text AS goal_id, NULL::int AS goal_no, NULL::text AS goal_statement`;
  const found = a.materials.length
    ? `SELECT pv.id, (m.position - 1)::int AS position
         FROM unnest(${p(a.materials.map((m) => m.publicationId))}::text[], ${p(a.materials.map((m) => m.version))}::int[]) WITH ORDINALITY AS m(publication_id, version, position)
         JOIN publication_version pv ON pv.publication_id = m.publication_id AND pv.version = m.version
         JOIN publication pub ON pub.id = pv.publication_id AND pub.owner_id = ${owner}`
    : `SELECT NULL::text AS id, 0 AS position WHERE false`;
  const continued = a.continuesPublicationId ? ` AND EXISTS (SELECT 1 FROM publication WHERE id = ${p(a.continuesPublicationId)} AND owner_id = ${owner})` : "";
  const claim = a.idempotency
    ? `INSERT INTO idempotency_key (principal_id, scope, key, fingerprint, run_id, created_at, expires_at)
       SELECT ${owner}, ${p(a.idempotency.scope)}, ${p(a.idempotency.key)}, ${p(a.idempotency.fingerprint)}, ${p(a.runId)}, ${now}, ${p(a.idempotency.expiresAt)} FROM checks, queue
       ON CONFLICT (principal_id, scope, key) DO UPDATE
         SET fingerprint = EXCLUDED.fingerprint, run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
         WHERE idempotency_key.expires_at <= ${now}
       RETURNING 1`
    : `SELECT 1 FROM checks, queue`;

  const sql = `
    WITH ws AS (${ws}),
    found AS (${found}),
    checks AS (SELECT ws.* FROM ws WHERE (SELECT count(*) FROM found) = ${p(a.materials.length)}${continued}),
    place AS (${queueGateSql(owner, p(a.maxQueuedRuns), "checks", p(a.admittedByToken === null ? null : tokenQueueShare(a.maxQueuedRuns)))}),
    queue AS (${!a.admittedFor ? "SELECT * FROM place" : endUserGateSql(owner, p(a.admittedFor), p(endUserQueueShare(a.maxQueuedRuns)), "place")}),
    claim AS (${claim}),
    gate AS (SELECT checks.* FROM checks, claim),
    conversation AS (
      INSERT INTO conversation (id, owner_id, title, created_at)
      SELECT ${p(randomUUID())}, ${owner}, ${p(conversationTitle(a.question))}, ${now} FROM gate RETURNING ${CONVERSATION_RETURNING}),
    run AS (
      INSERT INTO run (id, owner_id, conversation_id, workspace_id, agent, agent_profile_id, question, max_turns, token_budget, deadline_seconds,
                       deadline_at, goal_version_id, goal_version_no, goal_statement, configuration, priority, tags, metadata, metadata_pairs,
                       continues_publication_id, admitted_by_token, admitted_for, token_readable_workspace_ids, created_at, max_cost, confirm_cost_above)
      SELECT ${p(a.runId)}, ${owner}, conversation.id, gate.id, ${p(a.agent)}, ${p(a.agentProfileId)}, ${p(a.question)}, ${p(a.limits.maxTurns)},
             ${p(a.limits.tokenBudget)}, ${p(a.limits.deadlineSeconds)}, ${p(new Date(a.now.getTime() + a.limits.deadlineSeconds * 1000))},
             gate.goal_id, gate.goal_no, gate.goal_statement, ${p(JSON.stringify({ agent: a.agent, limits: a.limits }))}::jsonb, ${p(a.priority)},
             ${p(a.tags)}::text[], ${p(JSON.stringify(a.metadata))}::jsonb, ${p(metadataPairs(a.metadata))}::text[],
             ${p(a.continuesPublicationId ?? null)}::text, ${p(a.admittedByToken)}::text, ${p(a.admittedFor ?? null)}::text, ${p(a.tokenReadableWorkspaceIds)}::text[], ${now}, ${p(a.limits.maxCost ?? null)}::numeric, ${p(a.limits.confirmCostAbove ?? null)}::numeric
        FROM gate, conversation
      RETURNING ${RUN_RETURNING}),
    materials AS (
      INSERT INTO run_material (run_id, publication_version_id, position) SELECT run.id, found.id, found.position FROM run, found),
    link AS (
      INSERT INTO workspace_link (id, workspace_id, target_kind, target_id, created_at)
      SELECT ${p(randomUUID())}, run."workspaceId", 'RUN', run.id, ${now} FROM run WHERE run."workspaceId" IS NOT NULL)
    SELECT (SELECT count(*) FROM checks)::int AS "checksPassed", (SELECT count(*) FROM queue)::int AS "queueRoom", (SELECT count(*) FROM place)::int AS "placeHeld", ${a.admittedByToken === null ? "" : `${tokensQueuedSql(owner)} AS "tokensQueued", `}run.*${related.columns} FROM (SELECT 1) AS one LEFT JOIN run ON true ${related.joins}`;
  // Straight to the driver (direct-statements.ts): prepared once per connection, as every statement
  // is, and without Prisma's query path (about 90 µs of this process's CPU a statement against 290 µs).
  const [row] = await queryRows<Record<string, unknown>>(prisma, sql, ...params);
  if (!row || Number(row.checksPassed) === 0) return { kind: "checks-failed" };
  if (Number(row.queueRoom) === 0) return { kind: "queue-full", tokensQueued: row.tokensQueued, endUserFull: Number(row.placeHeld) > 0 };
  if (row.id === null) return { kind: "key-taken" };
  for (const key of DECIMALS) if (typeof row[key] === "string") row[key] = new Prisma.Decimal(row[key]);
  const run = Object.fromEntries(Object.keys(RUN_COLUMNS).map((field) => [field, row[field]])) as Run;
  return { kind: "admitted", run: withRelations(run, row, relations) };
}
