// Live subscriptions the database fails for a moment after they started, on PostgreSQL through a
// fault proxy: the first update arrives, then the link hangs while the next one is due. The
// subscription ends with SERVICE_UNAVAILABLE and retryAfterSeconds, as its start would have been
// answered; the operator gets a warning. Once the link is back, subscribing again with the last
// seq received as afterSeq gets exactly the updates missed, and the updates shared by many
// subscribers are read anew, not answered from what failed.
import { createClient as createWsClient } from "graphql-ws";
import { print } from "graphql";
import { WebSocket } from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../../sdk/client.js";
import { RunEventsDocument, TraceUpdatesDocument } from "../../sdk/generated/graphql.js";
import { type Database, openDatabase } from "../../src/db/open-database.js";
import { appendEventIn, ensureTrace, publishTraceChanges, startSpanIn, type TraceChange } from "../../src/domain/trace/trace-writes.js";
import type { Prisma } from "../../src/generated/prisma/client.js";
import { idOfType } from "../../src/domain/global-id.js";
import { UNAVAILABLE_WARNING } from "../../src/graphql/transient-failures.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { unavailableApp } from "../support/unavailable-app.js";
import { waitUntil } from "../support/wait.js";

const TRACE_UPDATES = print(TraceUpdatesDocument);
const RUN_EVENTS = print(RunEventsDocument);
const UNAVAILABLE = { code: "SERVICE_UNAVAILABLE", retryAfterSeconds: 1 };
/** The last payload of a subscription the database failed: no data, and when to subscribe again (as a failed start is answered). */
const endedUnavailable = (field: string) => ({
  data: null,
  errors: [expect.objectContaining({ path: [field], extensions: UNAVAILABLE, message: expect.stringMatching(/Subscribe again after retryAfterSeconds/) })],
});

type Payload = { data?: any; errors?: { message: string; extensions?: Record<string, unknown> }[] };
/** What one subscription received: each payload, an error that ended it, and whether it completed. */
type Received = { payloads: Payload[]; error?: unknown; completed: boolean };

describe.runIf(backends.includes("postgres"))("live subscriptions the database fails for a moment, on PostgreSQL", () => {
  const h = unavailableApp("unavailable-subscriptions");
  let writer: Database | undefined;
  const sockets: ReturnType<typeof createWsClient>[] = [];
  afterEach(async () => {
    await Promise.all(sockets.splice(0).map((socket) => socket.dispose()));
    await writer?.close();
    writer = undefined;
    await h.close();
  });

  /** An app whose link to PostgreSQL hangs on demand, a queued run of its principal, and a writer that reaches PostgreSQL directly. */
  async function start() {
    const { client } = await h.start({ timeouts: { connectMs: 2_000, queryMs: 1_000 } }, true, { listen: true });
    writer = await openDatabase({ kind: "postgres", url: h.url!, timeouts: {} }, { instanceId: "unavailable-subscriptions-writer", migrations: [] });
    const { run } = await admit(client, { question: "watched" });
    const runId = idOfType(run.id, "Run")!;
    await writer.prisma.$transaction((tx) => ensureTrace(tx, runId));
    return { runGlobalId: run.id, runId };
  }

  /** Writes trace changes the way a worker does, and announces those in `announce` (all by default). */
  async function record(write: (tx: Prisma.TransactionClient) => Promise<TraceChange[]>, announce?: number[]) {
    const changes = await writer!.prisma.$transaction(write);
    publishTraceChanges(
      h.t!.app.events,
      changes.filter((change) => !announce || announce.includes(change.seq)),
    );
    return changes;
  }

  function subscribe(query: string, variables: Record<string, unknown>): Received {
    const socket = createWsClient({ url: h.t!.server!.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    sockets.push(socket);
    const received: Received = { payloads: [], completed: false };
    socket.subscribe(
      { query, variables },
      {
        next: (payload) => void received.payloads.push(payload as Payload),
        error: (error) => void (received.error = error),
        complete: () => void (received.completed = true),
      },
    );
    return received;
  }
  const ended = (received: Received) => waitUntil(() => (received.completed || received.error ? true : undefined), 20_000);
  const updates = (received: Received) => received.payloads.flatMap((payload) => (payload.data?.traceUpdates ? [payload.data.traceUpdates] : []));
  const warnings = () => h.logged.filter((entry) => entry.message === UNAVAILABLE_WARNING);

  it("traceUpdates whose next update cannot be read ends with SERVICE_UNAVAILABLE for each subscriber; resubscribing with afterSeq gets exactly what was missed", async () => {
    const { runGlobalId, runId } = await start();
    const watchers = [subscribe(TRACE_UPDATES, { runId: runGlobalId }), subscribe(TRACE_UPDATES, { runId: runGlobalId })];
    await waitUntil(() => (h.t!.listeners() >= 2 ? true : undefined), 10_000);
    const { spanId } = (await record(async (tx) => [(await startSpanIn(tx, { traceId: runId, kind: "RUN", name: "run", at: new Date() })).change]))[0]!;
    await waitUntil(() => (watchers.every((watcher) => updates(watcher).length === 1) ? true : undefined), 10_000);

    // The next update is an appended event, read from the database as it is delivered: the link hangs meanwhile.
    h.proxy!.hang();
    const span = { id: spanId!, traceId: runId };
    await record(async (tx) => [await appendEventIn(tx, span, { kind: "TOOL_OUTPUT", payload: "first result", at: new Date() })]);
    for (const watcher of watchers) {
      await ended(watcher);
      expect(updates(watcher).map((update) => [update.seq, update.kind])).toEqual([["1", "SPAN_STARTED"]]);
      // Once each, the update that failed not sent at all.
      expect(watcher.payloads.slice(1)).toEqual([endedUnavailable("traceUpdates")]);
      expect([watcher.completed, watcher.error]).toEqual([true, undefined]);
    }
    expect(warnings()).toHaveLength(2);
    expect(h.logged.filter((entry) => entry.level === "error")).toEqual([]);

    h.proxy!.heal();
    await h.settled();
    await record(async (tx) => [await appendEventIn(tx, span, { kind: "TOOL_OUTPUT", payload: "second result", at: new Date() })]);
    // Each subscriber resumes after the last update it received: the missed ones, once each, read anew.
    const resumed = subscribe(TRACE_UPDATES, { runId: runGlobalId, afterSeq: "1" });
    await waitUntil(() => (updates(resumed).length >= 2 ? true : undefined), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(updates(resumed).map((update) => [update.seq, update.kind, update.event?.preview])).toEqual([
      ["2", "EVENT_APPENDED", "first result"],
      ["3", "EVENT_APPENDED", "second result"],
    ]);
    expect(resumed.payloads.every((payload) => payload.errors === undefined)).toBe(true);
  });

  it("traceUpdates whose missed changes cannot be read from the database ends with SERVICE_UNAVAILABLE; resubscribing with afterSeq gets them; any other error stays masked", async () => {
    const { runGlobalId, runId } = await start();
    const watcher = subscribe(TRACE_UPDATES, { runId: runGlobalId });
    await waitUntil(() => (h.t!.listeners() >= 1 ? true : undefined), 10_000);
    const { spanId } = (await record(async (tx) => [(await startSpanIn(tx, { traceId: runId, kind: "RUN", name: "run", at: new Date() })).change]))[0]!;
    await waitUntil(() => (updates(watcher).length === 1 ? true : undefined), 10_000);

    // Seq 2's announcement is lost: seq 3's shows the gap, and the stream reads seq 2 from the hung link.
    h.proxy!.hang();
    const span = { id: spanId!, traceId: runId };
    await record(
      async (tx) => [
        await appendEventIn(tx, span, { kind: "TOOL_OUTPUT", payload: "lost", at: new Date() }),
        await appendEventIn(tx, span, { kind: "TOOL_OUTPUT", payload: "announced", at: new Date() }),
      ],
      [3],
    );
    await ended(watcher);
    expect(updates(watcher).map((update) => update.seq)).toEqual(["1"]);
    expect(watcher.payloads.slice(1)).toEqual([endedUnavailable("traceUpdates")]);
    expect([watcher.completed, watcher.error]).toEqual([true, undefined]);
    expect(warnings()).toHaveLength(1);

    h.proxy!.heal();
    await h.settled();
    const resumed = subscribe(TRACE_UPDATES, { runId: runGlobalId, afterSeq: "1" });
    await waitUntil(() => (updates(resumed).length >= 2 ? true : undefined), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(updates(resumed).map((update) => [update.seq, update.event?.preview])).toEqual([
      ["2", "lost"],
      ["3", "announced"],
    ]);

    // An event written before its table went, announced after: it cannot be read, and trying again
    // will not help. That is no moment of the database's: "Unexpected error.", and no warning.
    const gone = await record(async (tx) => [await appendEventIn(tx, span, { kind: "TOOL_OUTPUT", payload: "gone", at: new Date() })], []);
    await h.sql!.query("ALTER TABLE span_event RENAME TO span_event_gone");
    publishTraceChanges(h.t!.app.events, gone);
    await waitUntil(() => (resumed.payloads.length >= 3 || resumed.error ? true : undefined), 10_000);
    const errors = [...(resumed.payloads[2]?.errors ?? []), ...((resumed.error as Payload["errors"]) ?? [])];
    expect(errors.map((error) => [error.message, error.extensions?.code])).toEqual([["Unexpected error.", "INTERNAL_SERVER_ERROR"]]);
    expect(warnings()).toHaveLength(1);
  });

  it("runEvents whose next status cannot be read ends with SERVICE_UNAVAILABLE; subscribing again starts from the run's status", async () => {
    const { runGlobalId, runId } = await start();
    const watcher = subscribe(RUN_EVENTS, { runId: runGlobalId });
    await waitUntil(() => (watcher.payloads.length === 1 ? true : undefined), 10_000);
    expect(watcher.payloads[0]!.data.runEvents.status).toBe("QUEUED");

    h.proxy!.hang();
    h.t!.app.events.publish("run:status", runId, { runId, status: "RUNNING", at: new Date().toISOString() });
    await ended(watcher);
    expect(watcher.payloads.slice(1)).toEqual([endedUnavailable("runEvents")]);
    expect([watcher.completed, watcher.error]).toEqual([true, undefined]);
    expect(warnings()).toHaveLength(1);

    h.proxy!.heal();
    await h.settled();
    const again = subscribe(RUN_EVENTS, { runId: runGlobalId });
    await waitUntil(() => (again.payloads.length === 1 ? true : undefined), 10_000);
    expect(again.payloads[0]).toEqual({ data: { runEvents: expect.objectContaining({ status: "QUEUED" }) } });
  });

  it("the SDK's traceUpdates waits retryAfterSeconds and resumes after the last update it gave: no error, no repeat, nothing missed", async () => {
    const { runGlobalId, runId } = await start();
    const dossier = createClient({ url: h.t!.server!.url });
    const seen: string[] = [];
    const reading = (async () => {
      for await (const update of dossier.traceUpdates(runGlobalId)) {
        seen.push(`${update.seq} ${update.kind} ${update.event?.preview ?? ""}`.trim());
        if (seen.length === 3) return;
      }
    })();
    try {
      await waitUntil(() => (h.t!.listeners() >= 1 ? true : undefined), 10_000);
      const { spanId } = (await record(async (tx) => [(await startSpanIn(tx, { traceId: runId, kind: "RUN", name: "run", at: new Date() })).change]))[0]!;
      await waitUntil(() => (seen.length === 1 ? true : undefined), 10_000);
      // The next update cannot be read: the server ends the subscription unavailable, and the SDK keeps trying.
      h.proxy!.hang();
      const span = { id: spanId!, traceId: runId };
      await record(async (tx) => [await appendEventIn(tx, span, { kind: "TOOL_OUTPUT", payload: "first result", at: new Date() })]);
      await waitUntil(() => (warnings().length >= 1 ? true : undefined), 20_000);
      h.proxy!.heal();
      await record(async (tx) => [await appendEventIn(tx, span, { kind: "TOOL_OUTPUT", payload: "second result", at: new Date() })]);
      await reading;
      expect(seen).toEqual(["1 SPAN_STARTED", "2 EVENT_APPENDED first result", "3 EVENT_APPENDED second result"]);
    } finally {
      await dossier.close();
    }
  });
});
