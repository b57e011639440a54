// Tool calls held for a person's decision, as an attempt sees them in its run's log. A held call
// has an approval request and has not begun executing: it is not dangling (it did not run, and it
// will be answered once decided), so repair leaves it alone. The step that made it is continued by
// the first attempt after its decisions: that attempt answers the held calls before the next turn
// (as not executed, when an AFTER_TURN or CONCLUDE stop is known before they begin: held-stops.ts).
import type { ToolApprovalRecord, ToolApprovalService } from "../../domain/runs/tool-approval-service.js";
import { toolCallsOf } from "../../domain/json-columns.js";
import type { Transact } from "../../domain/transaction.js";
import type { LoggedMessage } from "../ports/conversation-log.js";
import type { ToolCall } from "../ports/model.js";
import type { Tool } from "../ports/tool.js";
import type { SpanRef, TraceSink } from "../ports/trace-sink.js";
import { approvalGate } from "../tools/approval-gate.js";
import type { AttemptLog } from "../memory/attempt-log.js";
import { admitsRuns, type ApprovalRules, bindsItsRuns, needsApproval } from "../tools/approval-policy.js";
import type { ToolGate } from "../tools/execute-tool-calls.js";
import { mcpServersNow, type McpServersNow } from "./mcp-servers-now.js";
import type { NextStep } from "./outcome.js";
import { failedSpanStatus, stepSpanStatus, withSpan } from "./spans.js";
import { stoppedSpanStatus, stopReasonOf } from "./stop.js";

/** How tool calls of runs are approved: where requests are kept, the operator's rules, how long a request waits. */
export type ApprovalSettings = {
  store: Pick<ToolApprovalService, "ofRun" | "request" | "markStarted">;
  /** The operator's rules (TOOL_APPROVALS). */
  rules?: ApprovalRules;
  /** How long a request waits for a decision before it counts as rejected. */
  timeoutMs: number;
  /** The clock requests are stamped with (tests move it). */
  now?: () => Date;
  /**
   * Where a step's calls of MCP tools read their servers' requireApproval as stored (mcp-servers-now.ts);
   * without it, the flag as the registry last synced it.
   */
  mcpServers?: McpServersNow;
};

/** A step's tool calls, the log entry that made them, and the approval requests already recorded for them. */
export type HeldStep = { calls: ToolCall[]; messageId: string; approvals: readonly ToolApprovalRecord[] };

/** The ids of calls that have a request and have not begun: repair must not treat them as dangling. */
export function heldCallIds(approvals: readonly ToolApprovalRecord[]): Set<string> {
  return new Set(approvals.filter((approval) => approval.startedAt === null).map((approval) => approval.toolCallId));
}

/**
 * The step an earlier attempt left waiting: the run's last ASSISTANT entry, and those of its calls
 * that are held and still have no result. Null when there is none.
 */
export function heldStep(runLog: readonly LoggedMessage[], approvals: readonly ToolApprovalRecord[]): { messageId: string; calls: ToolCall[] } | null {
  const index = runLog.findLastIndex((message) => message.role === "ASSISTANT");
  const assistant = runLog[index];
  if (!assistant) return null;
  const requested = new Set(approvals.filter((a) => a.messageId === assistant.id && a.startedAt === null).map((a) => a.toolCallId));
  const answered = new Set(runLog.slice(index + 1).flatMap((message) => (message.toolCallId ? [message.toolCallId] : [])));
  const calls = (toolCallsOf(assistant.toolCalls) ?? []).filter((call) => requested.has(call.id) && !answered.has(call.id));
  return calls.length > 0 ? { messageId: assistant.id, calls } : null;
}

/**
 * Whether a call of `toolName` needs approval under the operator's rules, the profile's and the
 * tool's own demand (asked as the call is considered), the rules matched against its exposed name and its full name.
 * A call of a tool the run is not offered needs none: it only gets an error. A call that admits a
 * run is held when the profile binds its runs (approval-policy.ts, admitsRuns): the run admitted would not be bound.
 */
export function approvalPolicy(
  settings: ApprovalSettings,
  profile: { toolApprovals?: ApprovalRules; tools?: readonly string[] } | undefined,
  tools: ReadonlyMap<string, Tool>,
): (toolName: string) => boolean {
  const binds = bindsItsRuns(profile);
  return (toolName) => {
    const tool = tools.get(toolName);
    if (tool === undefined) return false;
    if (binds && (admitsRuns(toolName) || admitsRuns(tool.fullName ?? ""))) return true;
    return needsApproval({ operator: settings.rules, profile: profile?.toolApprovals, toolRequires: tool.requiresApproval?.() }, toolName, tool.fullName);
  };
}

/**
 * The gate of a step's calls: the run's policy over the operator's rules, its profile's and its
 * tools' own demands — an MCP server's read as stored when the step's first call of it is gated
 * (the step's read, or the connection's flag, either holds the call).
 */
export function stepGate(
  settings: ApprovalSettings,
  attempt: {
    run: { id: string };
    write: Transact;
    sink: TraceSink;
    profile: { toolApprovals?: ApprovalRules; tools?: readonly string[] };
    tools: ReadonlyMap<string, Tool>;
  },
  step: HeldStep,
): ToolGate {
  const policy = approvalPolicy(settings, attempt.profile, attempt.tools);
  const servers = settings.mcpServers && mcpServersNow(settings.mcpServers, step.calls, attempt.tools);
  return approvalGate({
    approvals: settings.store,
    // The step's own read of a server's flag holds its calls even after a sync resets the connection's.
    needsApproval: servers ? (toolName) => servers.requires(toolName) || policy(toolName) : policy,
    current: servers?.current,
    inputSchemaOf: (toolName) => attempt.tools.get(toolName)?.schema.parameters ?? null,
    mcpToolOf: (toolName) => attempt.tools.get(toolName)?.mcpTool ?? null,
    mcpDigestOf: (toolName) => attempt.tools.get(toolName)?.mcpDigest ?? null,
    existing: step.approvals,
    runId: attempt.run.id,
    messageId: step.messageId,
    write: attempt.write,
    sink: attempt.sink,
    timeoutMs: settings.timeoutMs,
    now: settings.now ?? (() => new Date()),
  });
}

/** The turn span a resumed step's decided calls run in: a TURN of its own, numbered as the turn that made them. */
export function inResumedTurn(
  scope: { sink: TraceSink; span: SpanRef; signal: AbortSignal },
  index: number,
  work: (span: SpanRef) => Promise<NextStep>,
): Promise<NextStep> {
  const { signal, sink, span: parent } = scope;
  if (signal.aborted) return Promise.resolve({ type: "interrupted", status: stopReasonOf(signal) });
  return withSpan(
    sink,
    { traceId: parent.traceId, parent, kind: "TURN", name: `turn ${index} (decided calls)`, attributes: { "dossier.resumed": true } },
    work,
    {
      ended: (next) => ({ status: stepSpanStatus(next, stoppedSpanStatus(signal)) }),
      failed: () => ({ status: failedSpanStatus(signal) }),
    },
  );
}

/** The run's final reply when its last log entry is one (an answer without tool calls), else null. */
export function answeredBefore(log: AttemptLog): string | null {
  const last = log.ofRun().at(-1);
  if (last?.role !== "ASSISTANT") return null;
  return (toolCallsOf(last.toolCalls) ?? []).length === 0 ? last.content : null;
}
