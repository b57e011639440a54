// The SDK's traceUpdates on an expired trace, over the socket and over SSE, on both databases:
// the server answers with one TRACE_EXPIRED update and completes, and the SDK's stream ends there
// (it does not subscribe again, waiting for a TRACE_ENDED that will never come).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createClient } from "../../sdk/client.js";
import { encodeGlobalId } from "../../src/domain/global-id.js";
import { backends } from "../support/databases.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { seedEndedRun, seedOwner } from "../support/trace-retention-seed.js";

const DAY = 86_400_000;
const ended = new Date("2026-06-01T12:00:00.000Z");

/** Every update of the stream, failing if it has not ended within `ms`. */
async function drain<T>(stream: AsyncIterableIterator<T>, ms = 8_000): Promise<T[]> {
  const seen: T[] = [];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the stream did not end within ${ms} ms after ${seen.length} updates`)), ms);
  });
  try {
    await Promise.race([
      (async () => {
        for await (const update of stream) seen.push(update);
      })(),
      timeout,
    ]);
    return seen;
  } finally {
    clearTimeout(timer);
    // Not awaited: a stream that hangs would hold its return() until its pending read settles.
    void stream.return?.();
  }
}

describe.each(backends)("the SDK's traceUpdates on an expired trace (%s)", (backend) => {
  let t: TestApp;
  let clock = ended;
  beforeEach(async () => {
    clock = ended;
    t = await startTestApp(backend, { listen: true, now: () => clock, retention: { days: 7, mode: "DELETE" } });
  });
  afterEach(() => t.close());

  it("ends after the one TRACE_EXPIRED update, over the socket and over SSE", async () => {
    const prisma = t.app.db.prisma;
    const run = await seedEndedRun(prisma, await seedOwner(prisma, "development"), { endedAt: ended });
    clock = new Date(ended.getTime() + 8 * DAY);
    expect((await t.app.services.retention.sweep()).expired).toBe(1);
    const runId = encodeGlobalId("Run", run.runId);

    const socket = t.connect();
    const sse = createClient({ url: t.server!.url, subscriptions: "sse" });
    try {
      for (const [name, client] of [
        ["socket", socket],
        ["sse", sse],
      ] as const) {
        const updates = await drain(client.traceUpdates(runId)).catch((error: Error) => {
          throw new Error(`${name}: ${error.message}`);
        });
        expect(
          updates.map((u) => u.kind),
          name,
        ).toEqual(["TRACE_EXPIRED"]);
        expect(updates[0]!.at, name).toBe(clock.toISOString());
      }
    } finally {
      await sse.close();
    }
  });
});
