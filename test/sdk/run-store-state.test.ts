// What a run store shows of tool calls, from runOutput and the trace alone: arguments are kept per
// model call, so a call the bound on a reply's size left out of its reply is never joined to a
// later call streamed under the same id, a call left out is not shown as being written, and a held
// call shows only its approval request's arguments, never a preview cut at 500 characters.
import { describe, expect, it } from "vitest";
import { applyOutput, applyTrace, emptyOutput, emptyTrace, type PendingApproval, standingOutput, toolCallsOf } from "../../sdk/run-store-state.js";
import type { RunOutputUpdate } from "../../sdk/run-output.js";

let seq = 0;
const delta = (modelCallSpanId: string, toolCallId: string, text: string) =>
  ({ seq: String((seq += 1)), kind: "TOOL_CALL_DELTA", modelCallSpanId, toolCallId, text }) as unknown as RunOutputUpdate;
const span = (id: string, kind: string, startedAt: string, status: string, attributes: object) => ({
  seq: String((seq += 1)),
  kind: "SPAN_STARTED",
  span: {
    id,
    kind,
    name: kind === "TOOL_CALL" ? "execute_tool deploy" : "chat m",
    status,
    startedAt,
    endedAt: null,
    attributes: JSON.stringify(attributes),
    usage: null,
  },
  event: null,
});

/** Reply 1 streams deploy "staging" and is cut (the call left out); reply 2 streams deploy "production" under the same id, held (or run at once). */
function scenario(held = true) {
  const output = emptyOutput();
  const trace = emptyTrace();
  applyOutput(output, delta("m1", "call_deploy", '{"target":"staging"}'));
  applyOutput(output, delta("m1", "call_deploy", "   "));
  applyTrace(trace, span("m1", "MODEL_CALL", "2026-01-01T00:00:01Z", "OK", { replyCut: { toolCallsLeftOut: 1 } }) as never);
  applyOutput(output, delta("m2", "call_deploy", '{"target":"production"}'));
  applyTrace(trace, span("m2", "MODEL_CALL", "2026-01-01T00:00:02Z", "OK", {}) as never);
  applyTrace(
    trace,
    span("t1", "TOOL_CALL", "2026-01-01T00:00:03Z", "OK", {
      "gen_ai.tool.call.id": "call_deploy",
      "gen_ai.tool.name": "deploy",
      ...(held ? { "dossier.approval": "REQUESTED" } : {}),
    }) as never,
  );
  return { output, trace };
}

describe("a run store's tool calls", () => {
  it("a call shows the arguments its own model call streamed, not those of a cut call under the same id", () => {
    const { output, trace } = scenario(false);
    const calls = toolCallsOf(standingOutput(output, trace), trace, []);
    expect(calls).toEqual([expect.objectContaining({ id: "call_deploy", status: "OK", arguments: '{"target":"production"}', argumentsComplete: true })]);
  });

  it("a held call whose approval request is not read yet shows no arguments, never streamed text or a preview", () => {
    const { output, trace } = scenario();
    applyTrace(trace, {
      seq: "90",
      kind: "EVENT_APPENDED",
      span: trace.spans.get("t1")!,
      event: { kind: "TOOL_INPUT", preview: "{", truncated: true },
    } as never);
    const calls = toolCallsOf(standingOutput(output, trace), trace, []);
    expect(calls).toEqual([expect.objectContaining({ id: "call_deploy", status: "WAITING_APPROVAL", arguments: "", argumentsComplete: false })]);
  });

  it("a call known only by the trace's preview of its input says whether that is all of it", () => {
    const trace = emptyTrace();
    const tool = span("t1", "TOOL_CALL", "2026-01-01T00:00:03Z", "RUNNING", { "gen_ai.tool.call.id": "call_x" }).span;
    applyTrace(trace, { seq: "91", kind: "EVENT_APPENDED", span: tool, event: { kind: "TOOL_INPUT", preview: '{"a":', truncated: true } } as never);
    expect(toolCallsOf(emptyOutput("5"), trace, [])).toEqual([expect.objectContaining({ arguments: '{"a":', argumentsComplete: false })]);
    applyTrace(trace, { seq: "92", kind: "EVENT_APPENDED", span: tool, event: { kind: "TOOL_INPUT", preview: '{"a":1}', truncated: false } } as never);
    expect(toolCallsOf(emptyOutput("5"), trace, [])).toEqual([expect.objectContaining({ arguments: '{"a":1}', argumentsComplete: true })]);
  });

  it("a call waiting for a decision shows the arguments its approval request holds", () => {
    const { output, trace } = scenario();
    const pending = [{ toolCallId: "call_deploy", toolName: "deploy", arguments: '{"target":"production"}', decision: null }] as unknown as PendingApproval[];
    expect(toolCallsOf(output, trace, pending)).toEqual([
      expect.objectContaining({ arguments: '{"target":"production"}', argumentsComplete: true, status: "WAITING_APPROVAL" }),
    ]);
  });

  it("a call left out of a cut reply is not shown as being written", () => {
    const output = emptyOutput();
    const trace = emptyTrace();
    applyOutput(output, delta("m1", "call_cut", '{"target":"staging"}'));
    expect(toolCallsOf(output, trace, [])).toEqual([expect.objectContaining({ id: "call_cut", status: "STREAMING" })]);
    applyTrace(trace, span("m1", "MODEL_CALL", "2026-01-01T00:00:01Z", "OK", { replyCut: { toolCallsLeftOut: 1 } }) as never);
    expect(toolCallsOf(output, trace, [])).toEqual([]);
  });
});
