// What a run store shows of tool calls, from runOutput and the trace alone: arguments are kept per
// model call, so a call the bound on a reply's size left out of its reply is never joined to a
// later call streamed under the same id, and a call left out is not shown as being written.
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

/** Reply 1 streams deploy "staging" and is cut (the call left out); reply 2 streams deploy "production" under the same id, held. */
function scenario() {
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
      "dossier.approval": "REQUESTED",
    }) as never,
  );
  return { output, trace };
}

describe("a run store's tool calls", () => {
  it("a held call shows the arguments its own model call streamed, not those of a cut call under the same id", () => {
    const { output, trace } = scenario();
    const calls = toolCallsOf(standingOutput(output, trace), trace, []);
    expect(calls).toEqual([expect.objectContaining({ id: "call_deploy", status: "WAITING_APPROVAL", arguments: '{"target":"production"}' })]);
  });

  it("a call waiting for a decision shows the arguments its approval request holds", () => {
    const { output, trace } = scenario();
    const pending = [{ toolCallId: "call_deploy", toolName: "deploy", arguments: '{"target":"production"}', decision: null }] as unknown as PendingApproval[];
    expect(toolCallsOf(output, trace, pending)).toEqual([expect.objectContaining({ arguments: '{"target":"production"}', status: "WAITING_APPROVAL" })]);
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
