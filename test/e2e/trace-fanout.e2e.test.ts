// T5: many watchers of one trace. Each subscriber keeps its own stream (start position, buffer,
// authorisation), and the response to each update is executed once per distinct selection and
// shared — every subscriber still receives every update, in order, exactly once.
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { parse } from "graphql";
import { afterEach, describe, expect, it } from "vitest";
import { TraceUpdatesDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor, withTimeout } from "../support/wait.js";

const OTHER_SELECTION = /* GraphQL */ `
  subscription Kinds($runId: ID!, $afterSeq: String) {
    traceUpdates(runId: $runId, afterSeq: $afterSeq) { seq kind }
  }
`;

describe.each(backends)("trace fan-out on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("executes each update once per distinct selection, and every subscriber gets every update once, in order", async () => {
    t = await startTestApp(backend, { listen: true });
    const owner = await t.createPrincipal("owner");
    const client = t.as(owner);
    const { run } = await admit(client, { question: "watched by many" });
    const recorder = new PrismaTraceRecorder({ prisma: t.app.db.prisma, events: t.app.events });
    const root = await recorder.startSpan({ traceId: await recorder.traceFor(idOfType(run.id, "Run")!), kind: "RUN", name: "watched" });

    const initial = t.server!.sharedSubscriptionExecutions();
    const sockets = [t.connect(owner), t.connect(owner)];
    const SUBSCRIBERS = 20;
    const streams = Array.from({ length: SUBSCRIBERS }, (_, i) =>
      // Half start from the beginning, half after the first change: positions differ, responses are shared.
      sockets[i % 2]!.subscribe(TraceUpdatesDocument, { runId: run.id, afterSeq: i % 2 === 0 ? null : "1" }),
    );
    // A different selection of the same trace gets its own responses.
    const kinds = sockets[1]!.subscribe(parse(OTHER_SELECTION) as TypedDocumentNode<{ traceUpdates: { seq: string; kind: string } }, { runId: string }>, {
      runId: run.id,
    });
    const drain = async (stream: AsyncIterableIterator<{ traceUpdates: { seq: string } }>) => {
      const seqs: string[] = [];
      for (;;) {
        const next = await withTimeout(stream.next(), 20_000);
        if (next.done) return seqs;
        seqs.push(next.value.traceUpdates.seq);
      }
    };
    const received = streams.map(drain);
    const kindSeqs = drain(kinds);
    // Another principal cannot watch, shared responses or not.
    const stranger = t.connect(await t.createPrincipal("stranger"));
    await expect(withTimeout(stranger.subscribe(TraceUpdatesDocument, { runId: run.id }).next(), 10_000)).rejects.toThrow("Run not found.");
    // The catch-up is the span's start, executed once for each of the two selections: wait until
    // both were (a busy machine may connect the sockets later than any fixed pause), then until
    // none has run for 300 ms.
    await waitFor(() => t!.server!.sharedSubscriptionExecutions() - initial >= 2, 20_000);
    let before = -1;
    while (before !== t.server!.sharedSubscriptionExecutions()) {
      before = t.server!.sharedSubscriptionExecutions();
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(before - initial).toBe(2);
    const EVENTS = 15;
    for (let i = 0; i < EVENTS; i += 1) await recorder.event(root, "THINKING", `thought ${i}`);
    await recorder.endSpan(root, { status: "OK" });
    await recorder.endTrace(root.traceId);
    const all = await Promise.all(received);
    const expected = (await t.app.db.prisma.traceChange.findMany({ where: { traceId: root.traceId }, orderBy: { seq: "asc" } })).map((c) => String(c.seq));
    all.forEach((seqs, i) => expect(seqs).toEqual(i % 2 === 0 ? expected : expected.filter((s) => Number(s) > 1)));
    expect(await kindSeqs).toEqual(expected);
    // The live updates (15 events, the span's end, the trace's end) were executed once per
    // selection, not once per subscriber.
    const live = t.server!.sharedSubscriptionExecutions() - before;
    expect(live).toBe((EVENTS + 2) * 2);
  });
});
