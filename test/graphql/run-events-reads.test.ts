// What a runEvents event costs the database: each event a subscriber gets carries what the run has
// cost so far and whether a call of it had no price, read as the event is delivered. Both come
// from one read of the run row, not one read each: on the embedded database every statement runs
// on the server's one thread, and a watched run's status changes (its start among them) land
// between its turns.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parse } from "graphql";
import { afterEach, describe, expect, it } from "vitest";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const EVENTS = parse("subscription ($runId: ID!) { runEvents(runId: $runId) { status cost { amount currency } costUnpriced run { id status } } }");
/** The read of the run's cost and whether it is unpriced, alone (the event's `run` reads the whole row). */
const COST_READ = /^\s*SELECT "t0"\."id", "t0"\."cost(_unpriced)?"/;
/**
 * What a subscription on a settled run sends: the check that the run is the subscriber's, the
 * run's status, and for its one event the run (its `run` field) and its costs.
 */
const SUBSCRIPTION_STATEMENTS = 4;
/** The worker's passes, on their own clock beside the subscription (claims, sweeps, schedules, lease renewals), and transaction control. */
const ELSE =
  /WITH (RECURSIVE )?running AS|^\s*UPDATE run SET lease_expires_at|FROM "public"\."(tool_approval|schedule)"|FROM tool_approval WHERE decision IS NULL AND expires_at <=|^\s*(BEGIN|COMMIT|ROLLBACK\b|-- Implicit "(BEGIN|COMMIT|ROLLBACK)")/i;

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe.each(backends)("a runEvents event's reads on %s", (backend) => {
  it("reads the run's cost and whether it is unpriced in one statement", async () => {
    const statements: string[] = [];
    t = await startTestApp(backend, {
      database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
      // The scheduler looks at the schedules once at start, not again while the statements are counted.
      runtime: { model: toolCallingModel(), schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-run-events-")) },
      listen: true,
    });
    const { run } = await admit(t.client, { question: callTools() });
    expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");

    const from = statements.length;
    const events: unknown[] = [];
    const client = t.connect();
    try {
      for await (const event of { [Symbol.asyncIterator]: () => client.subscribe(EVENTS as any, { runId: run.id }) })
        events.push((event as { runEvents: unknown }).runEvents);
    } finally {
      await client.close();
    }
    // The settled run's one event: its terminal status, with what it cost (nothing: the scripted model has no price).
    expect(events).toEqual([
      { status: "SUCCEEDED", cost: { amount: "0", currency: "USD" }, costUnpriced: expect.any(Boolean), run: { id: run.id, status: "SUCCEEDED" } },
    ]);
    const sent = statements.slice(from).filter((sql) => !ELSE.test(sql));
    const costReads = sent.filter((sql) => COST_READ.test(sql));
    expect(costReads).toHaveLength(1);
    expect(costReads[0]).toMatch(/"t0"\."cost"/);
    expect(costReads[0]).toMatch(/"t0"\."cost_unpriced"/);
    expect(sent).toHaveLength(SUBSCRIPTION_STATEMENTS);
  });
});
