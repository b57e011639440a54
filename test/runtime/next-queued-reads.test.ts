// Runs that started together end together, and the end of each asks for its conversation's next
// queued run, which the worker then announces. The asks made in one turn of the worker's event
// loop go to the database in one statement (domain/runs/next-queued.ts), not one each — a hundred
// runs ending at once no longer queue a hundred reads behind the last pieces of the other answers
// — and each still gets its own conversation's next run: the oldest queued, or none.
import { afterEach, describe, expect, it } from "vitest";
import { createEventBus } from "../../src/events/topics.js";
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, startConversation } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Conversations whose runs "end" at once. */
const CONVERSATIONS = 12;
/** The read of a conversation's next queued run: the run table by conversation and status, oldest first. */
const NEXT_QUEUED = /^\s*SELECT[\s\S]*FROM "?(public"\.")?run"?[\s\S]*conversation_id[\s\S]*status[\s\S]*ORDER BY[\s\S]*created_at/;

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe.each(backends)("the next queued runs of conversations on %s", (backend) => {
  it(`are read in one statement when ${CONVERSATIONS} runs' ends ask at once, each its own conversation's`, async () => {
    const statements: string[] = [];
    t = await startTestApp(backend, { database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }) });
    // No worker: every admitted run stays queued. Conversation i has i % 3 queued runs.
    const expected: (string | null)[] = [];
    const conversationIds: string[] = [];
    for (let i = 0; i < CONVERSATIONS; i += 1) {
      const conversationId = (await startConversation(t.client, `chat ${i}`)).id;
      conversationIds.push(dbId(conversationId));
      const queued: string[] = [];
      for (let n = 0; n < i % 3; n += 1)
        queued.push(dbId((await admit(t.client, { conversationId, question: `question ${i}.${n}`, multitask: "ENQUEUE" })).run.id));
      expected.push(queued[0] ?? null);
    }
    const runs = new PrismaRunState({ prisma: t.app.db.prisma, events: createEventBus(), trace: { announce: () => undefined, exportEnded: () => undefined } });
    const from = statements.length;
    const next = await Promise.all(conversationIds.map((id) => runs.nextQueued(id)));
    const reads = statements.slice(from).filter((sql) => NEXT_QUEUED.test(sql)).length;
    expect(next).toEqual(expected);
    // One per conversation before.
    expect(reads).toBe(1);
    // One asked alone is read alone, at once.
    expect(await runs.nextQueued(conversationIds[2]!)).toBe(expected[2]);
  });
});
