// runOutput while the API's database is slow to answer (its connections taken by many subscribers
// at once, as when a worker starts a hundred runs together): each model call's first pieces still
// reach the subscriber as the model writes them — the subscriber does not wait for its read of the
// running calls, and the executing instance tells which call came before — and the subscriber gets
// every piece once, in order, then the calls' ends and the run's.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { type RunOutputUpdate, runOutputUpdates } from "../../src/trace/output/run-output-updates.js";
import { comparePositions } from "../../sdk/client.js";
import { admit } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";
import { directQuery, sendingDirect } from "../../src/db/direct-statements.js";

const ANSWER = Array.from({ length: 6 }, (_, i) => `piece ${i} of the answer; `);
const CALLS = [{ id: "call_a", name: "task_list", fragments: ['{"action":', '"add","title":', '"Verify"}'] }];
/** How much later than asked the subscriber's own statements are answered. */
const SLOW_MS = 3_000;

const later = <T>(answer: () => Promise<T>) => new Promise((resolve) => setTimeout(resolve, SLOW_MS)).then(answer);

/** The app's database as the subscriber sees it: its raw statements and its reads of spans answered SLOW_MS late. */
function slowStatements(prisma: PrismaClient): PrismaClient {
  const span = new Proxy(prisma.span, {
    get(target, key, receiver) {
      if (key !== "findMany") return Reflect.get(target, key, receiver);
      return (...args: Parameters<PrismaClient["span"]["findMany"]>) => later(() => target.findMany(...args));
    },
  });
  const slow = new Proxy(prisma, {
    get(target, key, receiver) {
      if (key === "span") return span;
      if (key !== "$queryRaw") return Reflect.get(target, key, receiver);
      return (...args: Parameters<PrismaClient["$queryRaw"]>) => later(() => target.$queryRaw(...args));
    },
  });
  // The statements sent straight to the driver (the start read, the replay reads: direct-statements.ts) are late too.
  const direct = directQuery(prisma);
  if (direct) sendingDirect(slow, (sql, params) => later(() => direct(sql, params)));
  return slow;
}

describe("runOutput with a slow database", () => {
  let stub: OpenAIStreamStub;
  let t: TestApp;
  /** When the model server wrote the first piece of each request, in order. */
  const firstWritten: number[] = [];

  beforeAll(async () => {
    stub = await startOpenAIStreamStub((body) => {
      const request = firstWritten.length;
      const sent = (index: number, at: number) => {
        if (index === 0) firstWritten[request] = at;
      };
      if (!body.messages.some((m) => m.role === "tool")) {
        firstWritten.push(performance.now());
        return { toolCalls: CALLS };
      }
      firstWritten.push(Number.NaN);
      return { text: ANSWER, gapMs: 100, sent };
    });
    t = await startTestApp("pglite", {
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-busy-database-")),
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await stub?.close();
  });

  it("gives each model call's first pieces as they are written, then everything once and in order", async () => {
    await t.app.runtime!.worker.stop();
    const { run } = await admit(t.client, { question: "Plan and answer" });
    const runId = idOfType(run.id, "Run")!;
    const stream = runOutputUpdates({
      prisma: slowStatements(t.app.db.prisma),
      events: t.app.events,
      runId,
      afterSeq: { seq: 0, chars: 0 },
      bufferLimit: 1_000,
    });
    const first = stream.next();
    t.app.runtime!.worker.start();

    const updates: { update: RunOutputUpdate; at: number }[] = [];
    for (let next = await withTimeout(first, 20_000); !next.done; next = await withTimeout(stream.next(), 20_000)) {
      updates.push({ update: next.value, at: performance.now() });
      if (next.value.kind === "RUN_DONE") break;
    }

    const kinds = updates.map(({ update }) => update.kind);
    expect(kinds.filter((kind, i) => kind !== kinds[i - 1])).toEqual(["TOOL_CALL_DELTA", "MESSAGE_DONE", "TEXT_DELTA", "MESSAGE_DONE", "RUN_DONE"]);
    const text = updates.flatMap(({ update }) => (update.kind === "TEXT_DELTA" ? [update.text] : [])).join("");
    const args = updates.flatMap(({ update }) => (update.kind === "TOOL_CALL_DELTA" ? [update.text] : [])).join("");
    expect(text).toBe(ANSWER.join(""));
    expect(args).toBe(CALLS[0]!.fragments.join(""));
    for (let i = 1; i < updates.length; i++) expect(comparePositions(updates[i]!.update.seq, updates[i - 1]!.update.seq)).toBeGreaterThan(0);
    // Each call's first piece came well before a statement of the subscriber could have been answered.
    const firstOf = (kind: string) => updates.find(({ update }) => update.kind === kind)!.at;
    expect(firstOf("TOOL_CALL_DELTA") - firstWritten[0]!).toBeLessThan(SLOW_MS / 2);
    expect(firstOf("TEXT_DELTA") - firstWritten[1]!).toBeLessThan(SLOW_MS / 2);
  });
});
