// Pausing and resuming runs (issue 38), on every backend. A RUNNING run asked to pause finishes
// the tool call in flight and logs its result (the end of its turn), then lets go of its worker (one slot here), which
// runs another run meanwhile; the paused run keeps its conversation (REJECT refuses a new run
// there) and its time limit stands still: paused past its whole deadline, it is resumed on another
// instance of the same database and finishes there. A QUEUED or WAITING run pauses at once;
// decisions made while paused are used on resume; cancelRun cancels a paused run; an ended run is
// a RunEndedError. runEvents shows PAUSED live, the trace records the pause, webhooks hear of it.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import {
  AdmitRunDocument,
  CancelRunDocument,
  CreateWebhookDocument,
  DecideToolCallDocument,
  PausedRunDocument,
  PauseRunDocument,
  ResumeRunDocument,
  RunApprovalsDocument,
  RunDocument,
  RunEventsDocument,
} from "../../sdk/generated/graphql.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends, createPersistentTestDatabase } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { callTools, callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { startReceiver } from "../support/webhook-receiver.js";
import { waitUntil, withTimeout } from "../support/wait.js";

const quickTool: Tool = {
  schema: { name: "quick_read", description: "reads quickly", parameters: { type: "object" } },
  execute: async () => "quick result",
};
const writeTool: Tool = {
  schema: { name: "write_report", description: "writes a report", parameters: { type: "object" } },
  execute: async () => "report written",
};

/** A tool that runs until the test lets it finish. */
function gatedTool(): { tool: Tool; started: Promise<void>; finish(): void } {
  let started!: () => void;
  let finish!: () => void;
  const startedPromise = new Promise<void>((resolve) => (started = resolve));
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const tool: Tool = {
    schema: { name: "slow_read", description: "reads slowly", parameters: { type: "object" } },
    execute: async () => {
      started();
      await finished;
      return "slow result";
    },
  };
  return { tool, started: startedPromise, finish };
}

const pause = async (client: DossierClient, runId: string) =>
  expectType((await client.request(PauseRunDocument, { input: { runId } })).pauseRun, "PauseRunSuccess").run;
const resume = async (client: DossierClient, runId: string) =>
  expectType((await client.request(ResumeRunDocument, { input: { runId } })).resumeRun, "ResumeRunSuccess").run;
const statusOf = async (client: DossierClient, runId: string) => expectType((await client.request(PausedRunDocument, { id: runId })).node!, "Run");
const inStatus = (client: DossierClient, runId: string, status: string) =>
  waitUntil(async () => {
    const run = await statusOf(client, runId);
    return run.status === status ? run : undefined;
  }, 20_000);
const runEvents = (run: NonNullable<Awaited<ReturnType<DossierClient["runTrace"]>>>) =>
  run.trace!.spans.filter((s) => s.kind === "RUN").flatMap((s) => s.events.map((e) => e.kind));

describe.each(backends)("pausing runs on %s", (backend) => {
  const apps: TestApp[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  const runtime = (tools: Tool[], approvals?: Record<string, "always" | "never">) => ({
    model: toolCallingModel(),
    sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-pause-")),
    extraTools: [quickTool, ...tools],
    concurrency: 1,
    // No run here waits for a lease to expire: a long one keeps a loaded machine from losing one.
    leaseMs: 10_000,
    sweepMs: 100,
    ...(approvals && { approvals: { rules: approvals } }),
  });

  it("pauses after the tool call in flight, frees the worker, holds the conversation and the clock; another instance resumes it", async () => {
    const store = await createPersistentTestDatabase(backend);
    cleanups.push(() => store.drop());
    const slow = gatedTool();
    const first = await startTestApp(backend, { database: () => store.open(), runtime: runtime([slow.tool]) });
    apps.push(first);
    const { client } = first;
    const { run } = await admit(client, {
      question: callToolsInTurns([{ name: "slow_read" }], [{ name: "quick_read" }]),
      limits: { deadlineSeconds: 8 },
    });
    await withTimeout(slow.started, 20_000);
    const requested = await pause(client, run.id);
    expect(requested.status).toBe("RUNNING");
    expect(requested.pauseRequestedAt).not.toBeNull();
    // The one worker slot is the paused run's until its tool call has finished.
    const { run: other } = await admit(client, { question: callTools({ name: "quick_read" }) });
    expect((await statusOf(client, other.id)).status).toBe("QUEUED");
    slow.finish();
    const paused = await inStatus(client, run.id, "PAUSED");
    expect(paused.pausedAt).not.toBeNull();
    expect(paused.pauseRequestedAt).toBeNull();
    expect((await settled(client, other.id)).status).toBe("SUCCEEDED");

    const atPause = (await client.runTrace(run.id))!;
    expect(atPause.status).toBe("PAUSED");
    expect(atPause.messages.edges.map((e) => [e.node.role, e.node.content])).toEqual([
      ["USER", expect.any(String)],
      ["ASSISTANT", expect.anything()],
      ["TOOL", "slow result"],
    ]);
    expect(atPause.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK"]);
    expect(atPause.trace!.spans.find((s) => s.kind === "TOOL_CALL")!.status).toBe("OK");
    expect(runEvents(atPause)).toEqual(expect.arrayContaining(["PAUSE_REQUESTED", "PAUSED"]));

    // The paused run still holds its conversation.
    const busy = await client.request(AdmitRunDocument, { input: { conversationId: await conversationOf(client, run.id), question: "next" } });
    expect(busy.admitRun.__typename).toBe("ConversationBusyError");

    // Paused past its whole time limit: it does not time out.
    const deadline = new Date(paused.deadlineAt as string).getTime();
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(deadline + 300), { timeout: 10_000, interval: 100 });
    expect((await statusOf(client, run.id)).status).toBe("PAUSED");
    await withTimeout(first.close(), 20_000);
    apps.splice(apps.indexOf(first), 1);

    const second = await startTestApp(backend, { database: () => store.open(), runtime: runtime([slow.tool]) });
    apps.push(second);
    const resumed = await resume(second.client, run.id);
    expect(["QUEUED", "RUNNING"]).toContain(resumed.status);
    expect(resumed.pausedAt).toBeNull();
    const moved = new Date(resumed.deadlineAt as string).getTime() - deadline;
    expect(moved).toBeGreaterThan(Date.now() - new Date(paused.pausedAt as string).getTime() - 1_000);
    const done = await settled(second.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toBe("slow result\n---\nquick result");
    expect(done.messages.edges.map((e) => e.node.role)).toEqual(["USER", "ASSISTANT", "TOOL", "ASSISTANT", "TOOL", "ASSISTANT"]);
    expect(done.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK", "COMPLETED"]);
    expect(done.attempts[0]!.instance).not.toBe(done.attempts[1]!.instance);
    expect(runEvents(done)).toContain("RESUMED");
    expect(done.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
  });

  it("pauses queued and waiting runs at once, keeps their place, uses decisions made while paused; cancel and ended runs", async () => {
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const t = await startTestApp(backend, {
      listen: true,
      webhooks: { deliver: true, allowedHosts: [receiver.host], retryDelaysSeconds: [0.2], pollMs: 100 },
      runtime: runtime([writeTool], { "write_*": "always", "*": "never" }),
    });
    apps.push(t);
    const client = t.connect();
    expectType(
      (await client.request(CreateWebhookDocument, { input: { url: receiver.url, events: ["RUN_PAUSED", "RUN_RESUMED"] } })).createWebhook,
      "CreateWebhookSuccess",
    );

    // A queued run pauses at once and keeps its place: its conversation's next run waits for it.
    await t.app.runtime!.worker.stop();
    const { run: queued } = await admit(client, { question: callTools({ name: "quick_read" }) });
    const pausedQueued = await pause(client, queued.id);
    expect(pausedQueued.status).toBe("PAUSED");
    const conversationId = await conversationOf(client, queued.id);
    const { run: follower } = await admit(client, { conversationId, question: callTools({ name: "quick_read" }), multitask: "ENQUEUE" });
    const { run: elsewhere } = await admit(client, { question: callTools({ name: "quick_read" }) });
    t.app.runtime!.worker.start();
    expect((await settled(client, elsewhere.id)).status).toBe("SUCCEEDED");
    expect((await statusOf(client, queued.id)).status).toBe("PAUSED");
    expect((await statusOf(client, follower.id)).status).toBe("QUEUED");
    await resume(client, queued.id);
    const [first, next] = [await settled(client, queued.id), await settled(client, follower.id)];
    expect([first.status, next.status]).toEqual(["SUCCEEDED", "SUCCEEDED"]);
    expect(new Date(next.startedAt as string).getTime()).toBeGreaterThanOrEqual(new Date(first.finishedAt as string).getTime());

    // A waiting run pauses at once; a decision while paused is kept and used on resume.
    const { run: waiting } = await admit(client, { question: callTools({ name: "write_report" }) });
    const statuses: string[] = [];
    const watching = (async () => {
      for await (const event of { [Symbol.asyncIterator]: () => client.subscribe(RunEventsDocument, { runId: waiting.id }) }) {
        statuses.push(event.runEvents.status);
        if (["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"].includes(event.runEvents.status)) return;
      }
    })();
    const held = await waitUntil(async () => {
      const run = expectType((await client.request(RunApprovalsDocument, { id: waiting.id })).node!, "Run");
      return run.status === "WAITING" ? run : undefined;
    }, 20_000);
    expect((await pause(client, waiting.id)).status).toBe("PAUSED");
    const [approval] = held.pendingApprovals.edges.map((e) => e.node);
    const decided = await client.request(DecideToolCallDocument, {
      input: { runId: waiting.id, toolCallId: approval!.toolCallId, decision: "REJECT", reason: "not now" },
    });
    expectType(decided.decideToolCall, "DecideToolCallSuccess");
    expect((await statusOf(client, waiting.id)).status).toBe("PAUSED");
    await resume(client, waiting.id);
    const done = await settled(client, waiting.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toContain("not now");
    await watching;
    expect(statuses.slice(statuses.indexOf("PAUSED"))).toEqual(["PAUSED", "QUEUED", "RUNNING", "SUCCEEDED"]);

    // A paused run can be cancelled; an ended one can be neither paused nor resumed.
    await t.app.runtime!.worker.stop();
    const { run: doomed } = await admit(client, { question: callTools({ name: "quick_read" }) });
    await pause(client, doomed.id);
    const cancelled = await client.request(CancelRunDocument, { input: { runId: doomed.id } });
    expect(expectType(cancelled.cancelRun, "CancelRunSuccess").run.status).toBe("CANCELLED");
    const ended = await client.request(PauseRunDocument, { input: { runId: doomed.id } });
    expect(expectType(ended.pauseRun, "RunEndedError").status).toBe("CANCELLED");
    expect(expectType((await client.request(ResumeRunDocument, { input: { runId: done.id } })).resumeRun, "RunEndedError").status).toBe("SUCCEEDED");

    await vi.waitFor(
      () => {
        const types = receiver.received.map((r) => JSON.parse(r.body) as { type: string; data: { runId: string } });
        expect(types.filter((e) => e.data.runId === queued.id).map((e) => e.type)).toEqual(["RUN_PAUSED", "RUN_RESUMED"]);
        expect(types.filter((e) => e.data.runId === waiting.id).map((e) => e.type)).toEqual(["RUN_PAUSED", "RUN_RESUMED"]);
      },
      { timeout: 10_000, interval: 100 },
    );
  });
});

async function conversationOf(client: DossierClient, runId: string): Promise<string> {
  const { node } = await client.request(RunDocument, { id: runId });
  return expectType(node!, "Run").conversation.id;
}
