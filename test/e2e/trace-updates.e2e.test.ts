// T2, T3: live trace updates that resume with afterSeq — no gap, no duplicate — over graphql-ws
// and SSE, with a bounded buffer per subscriber.
import { parse } from "graphql";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TraceUpdatesDocument, type TraceUpdatesSubscription } from "../../sdk/generated/graphql.js";
import { createClient } from "../../sdk/client.js";
import { traceUpdates } from "../../src/trace/updates/trace-updates.js";
import { startHttpServer } from "../../src/server/http-server.js";
import { type ScriptStep, ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";

type Update = TraceUpdatesSubscription["traceUpdates"];

const planning = (n: number): ScriptStep[] => [
  ...Array.from({ length: n }, (_, i) => ({
    toolCalls: [{ name: "task_list", arguments: { action: "add", title: `step ${i}` } }],
    delayMs: 60,
  })),
  { content: "planned", delayMs: 60 },
];

describe.each(backends)("trace updates on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function start(steps: ScriptStep[]) {
    t = await startTestApp(backend, {
      listen: true,
      runtime: { model: new ScriptedModel({ name: "trace", steps }), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-trace-")) },
    });
    return t;
  }

  const databaseLog = async (app: TestApp, runId: string) =>
    (
      await app.app.db.prisma.traceChange.findMany({
        where: { traceId: Buffer.from(runId, "base64").toString("utf8").split(":")[1] },
        orderBy: { seq: "asc" },
      })
    ).map((c) => [String(c.seq), c.type]);

  async function collect(iterator: AsyncIterableIterator<{ traceUpdates: Update }>, until: (u: Update[]) => boolean) {
    const updates: Update[] = [];
    for (;;) {
      const next = await withTimeout(iterator.next(), 20_000);
      if (next.done) return { updates, completed: true };
      updates.push(next.value.traceUpdates);
      if (until(updates)) return { updates, completed: false };
    }
  }

  it("resumes after a disconnect with afterSeq: what was received equals the database log exactly", async () => {
    const app = await start(planning(8));
    const first = app.connect();
    const { run } = await admit(first, { question: "plan eight steps" });
    const before = first.subscribe(TraceUpdatesDocument, { runId: run.id });
    const part1 = await collect(before, (u) => u.length >= 12);
    await before.return?.();
    await first.close();
    await new Promise((resolve) => setTimeout(resolve, 300)); // the run goes on meanwhile

    const second = app.connect();
    const afterSeq = part1.updates.at(-1)!.seq;
    const part2 = await collect(second.subscribe(TraceUpdatesDocument, { runId: run.id, afterSeq }), () => false);
    expect(part2.completed).toBe(true);
    const received = [...part1.updates, ...part2.updates].map((u) => [u.seq, u.kind]);
    expect(received).toEqual(await databaseLog(app, run.id));
    expect(received.at(-1)?.[1]).toBe("TRACE_ENDED");
    const spanStarted = part1.updates.find((u) => u.kind === "SPAN_STARTED");
    expect(spanStarted?.span).toMatchObject({ kind: "RUN", status: expect.any(String) });
    const event = [...part1.updates, ...part2.updates].find((u) => u.kind === "EVENT_APPENDED");
    expect(event?.event?.preview).toBeTruthy();
    // An appended event comes with the span it was added to, live and replayed alike.
    const appended = [...part1.updates, ...part2.updates].filter((u) => u.kind === "EVENT_APPENDED");
    const traceId = Buffer.from(run.id, "base64").toString("utf8").split(":")[1];
    const recorded = await app.app.db.prisma.traceChange.findMany({ where: { traceId, type: "EVENT_APPENDED" }, orderBy: { seq: "asc" } });
    expect(appended.map((u) => [u.seq, u.span?.id])).toEqual(recorded.map((c) => [String(c.seq), Buffer.from(`Span:${c.spanId}`).toString("base64")]));
  });

  it("the SDK's traceUpdates continues across a server restart without gaps or duplicates", async () => {
    const app = await startTestApp(backend, {
      runtime: { model: new ScriptedModel({ name: "restart", steps: planning(10) }), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-trace-")) },
    });
    t = app;
    let server = await startHttpServer({ app: app.app, port: 0, host: "127.0.0.1" });
    const { port } = server;
    const client = createClient({ url: server.url, wsUrl: server.wsUrl });
    try {
      const { run } = await admit(client, { question: "restart me" });
      const received: string[][] = [];
      let restarted = false;
      for await (const update of client.traceUpdates(run.id)) {
        received.push([update.seq, update.kind]);
        if (received.length === 8 && !restarted) {
          restarted = true;
          await server.close(); // every socket drops; the run goes on
          await new Promise((resolve) => setTimeout(resolve, 300));
          server = await startHttpServer({ app: app.app, port, host: "127.0.0.1" });
        }
      }
      expect(restarted).toBe(true);
      expect(received).toEqual(await databaseLog(app, run.id));
    } finally {
      await client.close();
      await server.close();
    }
  });

  it("replays a finished run's whole trace and completes, over graphql-ws and over SSE", async () => {
    const app = await start(planning(2));
    const client = app.connect();
    const { run } = await admit(client, { question: "short" });
    for (let i = 0; i < 200; i += 1) {
      const view = (await client.runTrace(run.id))!;
      if (view.trace?.endedAt) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const expected = await databaseLog(app, run.id);
    const ws = await collect(client.subscribe(TraceUpdatesDocument, { runId: run.id }), () => false);
    expect(ws.updates.map((u) => [u.seq, u.kind])).toEqual(expected);

    const response = await fetch(app.server!.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({
        query: "subscription($runId: ID!, $afterSeq: String) { traceUpdates(runId: $runId, afterSeq: $afterSeq) { seq kind } }",
        variables: { runId: run.id, afterSeq: "3" },
      }),
    });
    const text = await response.text();
    const sse = [...text.matchAll(/^data: (.+)$/gm)]
      .map((m) => JSON.parse(m[1]!) as { data?: { traceUpdates: { seq: string; kind: string } } })
      .filter((m) => m.data)
      .map((m) => [m.data!.traceUpdates.seq, m.data!.traceUpdates.kind]);
    expect(sse).toEqual(expected.slice(3));
  });

  it("shows each span as it was after each update, also when the updates are replayed after the span ended", async () => {
    const app = await start(planning(1));
    const client = app.connect();
    const { run } = await admit(client, { question: "one step" });
    expect((await settled(client, run.id)).status).toBe("SUCCEEDED");

    // Every span has ended by now; resuming from the first update replays all of them.
    const replayed = await collect(client.subscribe(TraceUpdatesDocument, { runId: run.id, afterSeq: "0" }), () => false);
    expect(replayed.completed).toBe(true);
    const spanUpdates = replayed.updates.filter((u) => u.kind.startsWith("SPAN_"));
    const spans = new Set(spanUpdates.map((u) => u.span!.id));
    expect(spans.size).toBeGreaterThanOrEqual(3); // the run, its attempt, model calls and a tool call
    for (const spanId of spans) {
      const [started, ...later] = spanUpdates.filter((u) => u.span!.id === spanId);
      expect(started).toMatchObject({ kind: "SPAN_STARTED", span: { status: "RUNNING", endedAt: null, usage: null } });
      const ended = later.at(-1)!;
      expect(ended.kind).toBe("SPAN_ENDED");
      expect(ended.span!.status).not.toBe("RUNNING");
      expect(ended.span!.endedAt).not.toBeNull();
    }
    // A model call's usage appears with the update that recorded it, not before.
    const modelCall = spanUpdates.find((u) => u.span!.kind === "MODEL_CALL" && u.span!.usage)!;
    expect(spanUpdates.find((u) => u.span!.id === modelCall.span!.id)!.span!.usage).toBeNull();
    expect(modelCall.span!.usage!.input).toBeGreaterThan(0);

    // So do the attributes its end added (the response's model and finish reason), which are
    // stored once, on the span, and taken back for the replay of the earlier update.
    const withAttributes = parse(`subscription ($runId: ID!) { traceUpdates(runId: $runId, afterSeq: "0") { seq kind span { id kind attributes } } }`);
    const again = await collect(client.subscribe(withAttributes as typeof TraceUpdatesDocument, { runId: run.id }), () => false);
    const modelSpan = again.updates.filter((u) => u.span?.id === modelCall.span!.id) as unknown as { kind: string; span: { attributes: string } }[];
    expect(modelSpan.map((u) => u.kind)).toEqual(["SPAN_STARTED", "SPAN_ENDED"]);
    const [atStart, atEnd] = modelSpan.map((u) => JSON.parse(u.span.attributes) as Record<string, unknown>);
    expect(atStart).not.toHaveProperty("finishReason");
    expect(atEnd).toHaveProperty("finishReason");
    // Everything the call started with is there at its start, as it is now.
    const { finishReason: _reason, "gen_ai.response.model": _model, ...rest } = atEnd!;
    expect(atStart).toEqual(rest);
  });

  it("tells a subscriber that stopped reading to resync, without slowing the run", async () => {
    const app = await start(planning(6));
    await app.app.runtime!.worker.stop(); // the subscriber is live before the run starts
    const { run } = await admit(app.client, { question: "busy run" });
    const runId = Buffer.from(run.id, "base64").toString("utf8").split(":")[1]!;
    const stream = traceUpdates({ prisma: app.app.db.prisma, events: app.app.events, traceId: runId, afterSeq: 0, bufferLimit: 5 });
    const first = stream.next();
    await new Promise((resolve) => setTimeout(resolve, 100));
    app.app.runtime!.worker.start();
    const firstUpdate = await withTimeout(first, 20_000);
    expect(firstUpdate.value).toMatchObject({ seq: 1 });
    // The subscriber stops reading; the run carries on to the end regardless.
    for (let i = 0; i < 200; i += 1) {
      const view = (await app.client.runTrace(run.id))!;
      if (view.status === "SUCCEEDED") break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const settled = (await app.client.runTrace(run.id))!;
    expect(settled).toMatchObject({ status: "SUCCEEDED", answer: "planned" });
    expect(Number(settled.trace!.lastSeq)).toBeGreaterThan(10);
    const next = await withTimeout(stream.next(), 5_000);
    expect(next.value).toMatchObject({ type: "RESYNC_REQUIRED", seq: 1 });
    expect((await stream.next()).done).toBe(true);
  });
});
