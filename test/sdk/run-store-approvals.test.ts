// A run store's approvals against scripted responses: approve() decides the request the published
// snapshot shows — not one that arrived since and is not shown yet — and a held call never shows the
// trace's 500-character preview of its arguments as if it were all of them; a failed read of the
// pending approvals is tried again, then shown as the store's error.
import { describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { DecideToolCallDocument, RunApprovalsDocument, RunStoreTraceDocument } from "../../sdk/generated/graphql.js";
import { createRunStore, type RunSnapshot } from "../../sdk/run-store.js";

/** An async stream the test feeds. */
function channel<T>() {
  const items: T[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  const iterator: AsyncIterableIterator<T> = {
    async next() {
      while (!items.length && !ended) await new Promise<void>((resolve) => (wake = resolve));
      return items.length ? { value: items.shift()!, done: false } : { value: undefined, done: true };
    },
    async return() {
      ended = true;
      wake?.();
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return { iterator, push: (item: T) => (items.push(item), wake?.()) };
}

const approval = (id: string, toolCallId: string, toolName: string, args: string) => ({
  __typename: "ToolApproval",
  id,
  toolCallId,
  toolName,
  mcpTool: null,
  arguments: args,
  editedArguments: null,
  requestedAt: "2026-01-01T00:00:00Z",
  expiresAt: null,
  decision: null,
  decidedBy: null,
  reason: null,
  decidedAt: null,
});
type Approval = ReturnType<typeof approval>;

let seq = 0;
/** A tool call's span held for a decision, with one event of it. */
const held = (toolCallId: string, name: string, event: { kind: string; preview: string; truncated: boolean }) => ({
  traceUpdates: {
    seq: String((seq += 1)),
    kind: "EVENT_APPENDED",
    span: {
      id: `span_${toolCallId}`,
      kind: "TOOL_CALL",
      name: `execute_tool ${name}`,
      status: "RUNNING",
      startedAt: "2026-01-01T00:00:01Z",
      endedAt: null,
      attributes: JSON.stringify({ "gen_ai.tool.call.id": toolCallId, "gen_ai.tool.name": name, "dossier.approval": "REQUESTED" }),
      usage: null,
    },
    event,
  },
});
const requested = (toolCallId: string, name: string) => held(toolCallId, name, { kind: "APPROVAL_REQUESTED", preview: "{}", truncated: false });

/** A client whose server is the test: the pending approvals it answers (or a failure), decisions recorded. */
function scripted() {
  const trace = channel<unknown>();
  const state = { approvals: [] as Approval[] | Error, reads: 0, decided: [] as Record<string, unknown>[] };
  const client = {
    async request(document: unknown, variables: { input?: Record<string, unknown> }) {
      if (document === RunApprovalsDocument) {
        state.reads += 1;
        if (state.approvals instanceof Error) throw state.approvals;
        const edges = state.approvals.map((node) => ({ node }));
        return { node: { __typename: "Run", id: "run_1", pendingApprovals: { edges, pageInfo: { hasNextPage: false, endCursor: null } } } };
      }
      if (document === DecideToolCallDocument) {
        state.decided.push(variables.input!);
        return { decideToolCall: { __typename: "DecideToolCallSuccess" } };
      }
      throw new Error("unexpected request");
    },
    subscribe: (document: unknown) => (document === RunStoreTraceDocument ? trace.iterator : channel().iterator),
    watchRun: () => channel().iterator,
  } as unknown as DossierClient;
  // Listeners hear only when the test publishes a snapshot, as a page's next frame would.
  const frames: (() => void)[] = [];
  const publish = () => frames.splice(0).forEach((flush) => flush());
  return { client, state, trace, schedule: (flush: () => void) => void frames.push(flush), publish };
}

const settle = async (test: () => boolean, ms = 5_000) => {
  for (const deadline = Date.now() + ms; !test(); await new Promise((resolve) => setTimeout(resolve, 5)))
    if (Date.now() > deadline) throw new Error("timed out");
};

describe("a run store's approvals", () => {
  it("approve() without an id decides the request the page shows, never one that came since and is not shown", async () => {
    const { client, state, trace, schedule, publish } = scripted();
    const store = createRunStore(client, "run_1", { schedule });
    store.subscribe(() => undefined);
    state.approvals = [approval("ap-A", "call_A", "read_file", '{"path":"notes.txt"}')];
    trace.push(requested("call_A", "read_file"));
    await settle(() => state.reads === 1);
    await settle(() => (publish(), store.getSnapshot().pendingApprovals.length === 1));
    const shown: RunSnapshot = store.getSnapshot();
    expect(shown.toolCalls).toEqual([expect.objectContaining({ id: "call_A", status: "WAITING_APPROVAL", arguments: '{"path":"notes.txt"}' })]);

    // call_A is decided elsewhere and call_B waits now; the page has not drawn that yet.
    state.approvals = [approval("ap-B", "call_B", "run_command", '{"command":"rm -rf /srv/prod"}')];
    trace.push(requested("call_B", "run_command"));
    await settle(() => state.reads === 2);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(store.getSnapshot()).toBe(shown);

    // The person clicks Approve on call_A: call_A's request is the one sent (the server refuses it, decided).
    await store.approve();
    expect(state.decided).toEqual([{ runId: "run_1", toolCallId: "call_A", decision: "APPROVE", approvalId: "ap-A" }]);
    // A call the page shows no request for is not decided at all.
    expect(await store.approve("call_B")).toMatchObject({ ok: false, typename: "NotFoundError" });
    expect(state.decided).toHaveLength(1);
    publish();
    expect(await store.reject("call_B", "no")).toEqual({ ok: true });
    expect(state.decided.at(-1)).toEqual({ runId: "run_1", toolCallId: "call_B", decision: "REJECT", approvalId: "ap-B", reason: "no" });
    store.close();
  });

  const FULL = JSON.stringify({ command: `echo ${"x".repeat(541)}; and delete /srv/prod` });

  it("a held call joined mid-wait shows no arguments until its request is read, never the preview; a failed read is tried again", async () => {
    expect(FULL.length).toBe(582);
    const { client, state, trace, schedule, publish } = scripted();
    state.approvals = new Error("network down");
    const store = createRunStore(client, "run_1", { schedule });
    store.subscribe(() => undefined);
    trace.push(held("call_X", "run_command", { kind: "TOOL_INPUT", preview: FULL.slice(0, 500), truncated: true }));
    trace.push(requested("call_X", "run_command"));
    await settle(() => state.reads === 1);
    publish();
    const before = store.getSnapshot().toolCalls;
    expect(before).toEqual([expect.objectContaining({ id: "call_X", status: "WAITING_APPROVAL" })]);
    expect(before[0]).toMatchObject({ arguments: "", argumentsComplete: false });

    // The read is tried again (after 250 ms): the request's whole arguments then show.
    state.approvals = [approval("ap-X", "call_X", "run_command", FULL)];
    await settle(() => (publish(), store.getSnapshot().pendingApprovals.length === 1));
    expect(store.getSnapshot().toolCalls[0]).toMatchObject({ arguments: FULL, argumentsComplete: true });
    expect(store.getSnapshot().error).toBeNull();
    store.close();
  });

  it("reads that keep failing end as the store's error after four tries", async () => {
    const { client, state, trace, schedule, publish } = scripted();
    state.approvals = new Error("network down");
    const store = createRunStore(client, "run_1", { schedule });
    store.subscribe(() => undefined);
    trace.push(requested("call_X", "run_command"));
    await settle(() => (publish(), store.getSnapshot().error !== null));
    expect(state.reads).toBe(4);
    expect(store.getSnapshot().error).toContain("network down");
    expect(store.getSnapshot().toolCalls[0]).toMatchObject({ status: "WAITING_APPROVAL", arguments: "", argumentsComplete: false });
    store.close();
  });
});
