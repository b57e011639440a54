// The gate every tool call of a run passes before it executes (human approval). A call that has
// an approval request follows its decision: APPROVE executes it (marked begun first, in the
// attempt's fence, so that a crash mid-call repairs it rather than runs it twice), EDIT executes
// it the same way with the person's arguments (ToolApproval.editedArguments; the log's ASSISTANT
// entry keeps what the model asked, and the call's TOOL result says which arguments ran), REJECT
// gives the model a result saying the person declined, with the reason; an open request keeps it
// waiting; an approved or edited call whose MCP server is gone now (`current`) does not run. A call
// without one is first brought up to date (`current`: its MCP server's requireApproval as stored
// now; a server gone declines it); one the policy then says needs
// approval gets its request — recorded in the attempt's fence, with an APPROVAL_REQUESTED event on
// its span — and waits. Any other call executes at once.
//
// A request records which MCP tool it is for (`<server>/<tool>`): an MCP tool's exposed name is
// fitted to model APIs, and when the server's list changes one exposed name may come to mean
// another tool. An approved call whose exposed name now means another tool than the one recorded
// does not run: the model is told the tool changed since it was approved, as with a decline. So
// does one whose tool is the same but no longer what the person was shown: the request records
// the tool's digest (its description and input schema as listed, its server's endpoint) when the
// call is held, and a re-list that changed them, or a server pointed elsewhere, declines the call.
//
// A decision decides one call: the one the person was shown. A call of the step that has the
// decided call's id but another tool or other arguments than the request recorded (a log written
// before ids were made unique) does not run, and the model is told nobody decided on it; a second
// call that is the same as the decided one does not run either (one execution per decision). An
// EDIT runs the person's arguments, but only for the call whose arguments they were shown.
//
// A call to hold whose arguments repeat a key within one object is never put to a person: the
// tool would get the last value (JSON.parse's rule) while the person may read the first. The
// model is told to send each key once; nothing executes and no request is recorded. So are
// arguments that are not JSON (a reply cut at its token limit) and a number JSON.parse would
// change (`9007199254740993` runs as 9007199254740992, `1e400` as null): the person reads digits
// the tool would not get. So are arguments with a key a person could read as another: a key
// holding an invisible character, mixing look-alike scripts, reading alike with another key of its
// object (at any depth, whatever the schema), or, where the tool's input schema declares the
// properties of its object, not one of them while not ASCII or reading alike with one of them
// (text/unreadable-key.ts has the rules; no call whose keys are ASCII, its tool's own and plainly
// apart is refused).
import type { Transact } from "../../domain/transaction.js";
import { fromStored, toStored } from "../../domain/text/stored-text.js";
import type { ToolApprovalRecord as ToolApproval, ToolApprovalService } from "../../domain/runs/tool-approval-service.js";
import { inexactNumber } from "../../domain/text/inexact-number.js";
import { type KeyProblem, unreadableKey } from "../../domain/text/unreadable-key.js";
import { visibleText } from "../../../sdk/visible-text.js";
import type { ToolCall } from "../ports/model.js";
import type { SpanRef, TraceSink } from "../ports/trace-sink.js";
import type { GateVerdict, ToolGate } from "./execute-tool-calls.js";

export type ApprovalGateOptions = {
  approvals: Pick<ToolApprovalService, "request" | "markStarted">;
  /** Whether a call of the tool needs approval (tools/approval-policy.ts over the run's sources). */
  needsApproval: (toolName: string) => boolean;
  /**
   * Asked first for a call without a decision, and before an approved or edited call runs: brings
   * what needsApproval reads up to date (an MCP server's requireApproval as stored now,
   * loop/mcp-servers-now.ts). Returns the result the model sees instead when the call must not run
   * at all (its server gone), else null.
   */
  current?: (toolName: string) => Promise<string | null>;
  /** The tool's input schema, kept with the request: what a person's edited arguments must fit. */
  inputSchemaOf: (toolName: string) => Record<string, unknown> | null;
  /** Which MCP tool the exposed name means now (`<server>/<tool>`); null for any other tool, or none. */
  mcpToolOf: (toolName: string) => string | null;
  /** The MCP tool's digest now (Tool.mcpDigest: its description, input schema and server endpoint); null for any other tool. */
  mcpDigestOf?: (toolName: string) => string | null;
  /** The requests of the step's assistant message already recorded (an attempt resuming the step). */
  existing: readonly ToolApproval[];
  runId: string;
  /** The ASSISTANT log entry that made the calls. */
  messageId: string;
  write: Transact;
  sink: TraceSink;
  timeoutMs: number;
  now: () => Date;
};

/** The result the model sees for an approved call whose name now means another tool than the one approved. */
export function changedToolResult(call: Pick<ToolCall, "name">, approved: string | null, now: string | null): string {
  return (
    `[not executed: "${call.name}" no longer names the tool the person approved (${approved ?? "not recorded"}); ` +
    `it now names ${now ?? "no tool of an MCP server"}, as the server's tool list changed. The call was not run; ` +
    `a new call is decided anew.]`
  );
}

/** The result the model sees for an approved call whose MCP tool changed since it was held (description, input schema or server). */
export function redefinedToolResult(call: Pick<ToolCall, "name">, approved: string | null): string {
  return (
    `[not executed: the tool "${call.name}" (${approved ?? "an MCP tool"}) changed since the person approved the call: ` +
    `its server re-listed it with another description or input schema, or the server was reconfigured. The call was not run; ` +
    `a new call is decided anew.]`
  );
}

/** The result the model sees for a call to hold whose arguments repeat `key` within one object. */
export function repeatedKeyResult(call: Pick<ToolCall, "name">, key: string): string {
  return (
    `[not executed: the arguments of this call of "${call.name}" give the key "${key}" more than once in one object, ` +
    `so a person cannot be shown what it would run. Send the call again with each key once.]`
  );
}

/** The result the model sees for a call to hold with a key a person could read as another (text/unreadable-key.ts). */
export function unreadableKeyResult(call: Pick<ToolCall, "name">, problem: KeyProblem): string {
  if (problem.kind === "repeated") return repeatedKeyResult(call, problem.key);
  const key = `"${visibleText(problem.key)}"`;
  const why = {
    hidden: `the key ${key}, which holds a character a person does not see`,
    mixedScripts: `the key ${key}, whose letters mix scripts with look-alike letters (Latin, Greek, Cyrillic…)`,
    lookAlike: `the keys "${visibleText(problem.kind === "lookAlike" ? problem.like : "")}" and ${key} in one object, which read alike`,
    undeclared: `the key ${key}, which is not ASCII and is not one of the properties the tool declares`,
    likeDeclared: `the key ${key}, which is not one of the properties the tool declares but reads like its property "${visibleText(problem.kind === "likeDeclared" ? problem.like : "")}"`,
  }[problem.kind];
  return (
    `[not executed: the arguments of this call of "${call.name}" give ${why}, so a person cannot be shown what it would run. ` +
    `Send the call again with each key once, in plain letters of one script (the tool's own property names).]`
  );
}

/** The result the model sees for a call to hold whose arguments a person could not read as they would run. */
export function unreadableArgumentsResult(call: Pick<ToolCall, "name">, problem: { notJson: true } | { number: string }): string {
  const why =
    "notJson" in problem
      ? "are not valid JSON (cut off, or not JSON at all)"
      : `hold the number ${problem.number}, which would run as another value than the one written (too large to keep exactly, or out of range)`;
  return `[not executed: the arguments of this call of "${call.name}" ${why}, so a person cannot be shown what it would run. Send the call again${"notJson" in problem ? " with complete JSON arguments" : ", writing that number as a string"}.]`;
}

/** The result the model sees for a call a person declined (or that expired). */
export function declinedResult(call: Pick<ToolCall, "name">, reason: string | null): string {
  return (
    `[not executed: the person reviewing tool calls declined this call of "${call.name}". ` +
    `Reason: ${reason ?? "none given"}. Do not retry it unchanged; continue without it or ask the user.]`
  );
}

/** The result the model sees for a second call of one message with an id a request (or decision) is for. */
function sameIdResult(call: Pick<ToolCall, "id">): string {
  return `[not executed: another call of this message has the same id "${call.id}".]`;
}

/** The result the model sees for a call whose id a decision is for, while its tool or arguments are not the ones the person was shown. */
export function notDecidedCallResult(call: Pick<ToolCall, "id" | "name">): string {
  return (
    `[not executed: this call of "${call.name}" has the id "${call.id}" of a call a person decided on, but not that call's tool and arguments, ` +
    `so nobody decided on it. A new call is decided anew.]`
  );
}

export function approvalGate(options: ApprovalGateOptions): ToolGate {
  const byCall = new Map(options.existing.filter((a) => a.messageId === options.messageId).map((a) => [a.toolCallId, a]));
  // Calls of one message have unique ids as Dossier logs them (loop/call-ids.ts); a second call
  // with an id already requested (a log written before ids were made unique) never runs: one
  // decision must never decide two calls.
  const requested = new Set<string>();
  // The approvals a call of this step follows: each decides one call, the one the person was shown.
  const followed = new Set<string>();
  return async (call, span): Promise<GateVerdict> => {
    const approval = byCall.get(call.id);
    if (approval) {
      // Decided before anything is awaited, so that calls gated at once see each other's claim.
      if (approval.decision !== null && (call.name !== approval.toolName || call.arguments !== fromStored(approval.arguments)))
        return { type: "decline", output: notDecidedCallResult(call) };
      if (followed.has(approval.id)) return { type: "decline", output: sameIdResult(call) };
      if (approval.decision !== null) followed.add(approval.id);
      return follow(approval, call, span, options);
    }
    const gone = options.current ? await options.current(call.name) : null;
    if (gone !== null) return { type: "decline", output: gone };
    if (!options.needsApproval(call.name)) return { type: "execute" };
    const key = unreadableKey(call.arguments, options.inputSchemaOf(call.name));
    if (key !== undefined) return { type: "decline", output: unreadableKeyResult(call, key) };
    const unreadable = unreadableArguments(call.arguments);
    if (unreadable) return { type: "decline", output: unreadableArgumentsResult(call, unreadable) };
    if (requested.has(call.id)) return { type: "decline", output: sameIdResult(call) };
    requested.add(call.id);
    const requestedAt = options.now();
    const expiresAt = new Date(requestedAt.getTime() + options.timeoutMs);
    const recorded = await options.write((tx) =>
      options.approvals.request(tx, {
        runId: options.runId,
        messageId: options.messageId,
        toolCallId: call.id,
        toolName: call.name,
        arguments: toStored(call.arguments),
        inputSchema: inputSchemaText(options.inputSchemaOf(call.name)),
        mcpTool: storedOrNull(options.mcpToolOf(call.name)),
        mcpToolDigest: options.mcpDigestOf?.(call.name) ?? null,
        spanId: span.id,
        requestedAt,
        expiresAt,
      }),
    );
    await options.sink.event(span, "APPROVAL_REQUESTED", {
      approvalId: recorded.id,
      toolCallId: call.id,
      toolName: call.name,
      expiresAt: expiresAt.toISOString(),
    });
    return { type: "pending" };
  };
}

/** Why a person could not read `text` as the call would run, if so: not JSON, or a number JSON.parse changes. */
function unreadableArguments(text: string): { notJson: true } | { number: string } | undefined {
  if (text.trim() === "") return undefined; // no arguments: run as {}
  try {
    JSON.parse(text);
  } catch {
    return { notJson: true };
  }
  const number = inexactNumber(text);
  return number === undefined ? undefined : { number };
}

const storedOrNull = (text: string | null): string | null => (text === null ? null : toStored(text));

function inputSchemaText(schema: Record<string, unknown> | null): string | null {
  return schema ? toStored(JSON.stringify(schema)) : null;
}

async function follow(approval: ToolApproval, call: ToolCall, span: SpanRef, options: ApprovalGateOptions): Promise<GateVerdict> {
  if (approval.decision === null) return { type: "pending" };
  // Which tool the call's name means in this attempt's list: an approval is for the tool it was requested for.
  const meant = options.mcpToolOf(call.name);
  // Compared as the server named it: the record holds the name as stored text (NUL and unpaired surrogates escaped).
  const approved = approval.mcpTool == null ? null : fromStored(approval.mcpTool);
  const changed = approval.decision !== "REJECT" && approved !== meant;
  // The same tool, changed since the person saw it: its description or input schema re-listed, or its server pointed elsewhere.
  const digest = options.mcpDigestOf?.(call.name) ?? null;
  const redefined = approval.decision !== "REJECT" && !changed && approval.mcpToolDigest != null && approval.mcpToolDigest !== digest;
  // The span of the call as it finally executes (or not) says what was decided, and by whom.
  const edited = approval.decision === "EDIT" ? fromStored(approval.editedArguments ?? "{}") : null;
  await options.sink.updateSpan(span, {
    attributes: {
      "dossier.approval": approval.decision,
      "dossier.approval.id": approval.id,
      "dossier.approval.decidedBy": approval.decidedBy,
      ...(changed ? { "dossier.approval.toolChanged": `${approved ?? "not recorded"} → ${meant ?? "none"}` } : {}),
      ...(redefined ? { "dossier.approval.toolRedefined": approved ?? call.name } : {}),
      ...(edited === null
        ? {}
        : { "dossier.approval.editedBy": approval.decidedBy, "gen_ai.tool.call.arguments.original": call.arguments, "gen_ai.tool.call.arguments": edited }),
    },
  });
  if (approval.decision === "REJECT") return { type: "decline", output: declinedResult(call, approval.reason) };
  if (changed) return { type: "decline", output: changedToolResult(call, approved, meant) };
  if (redefined) return { type: "decline", output: redefinedToolResult(call, approved) };
  // A server removed or turned off since the call was decided: an approved call of it does not run either.
  const gone = options.current ? await options.current(call.name) : null;
  if (gone !== null) return { type: "decline", output: gone };
  // A request recorded before such keys were refused: what the person approved is ambiguous. A
  // person's edit is not read for them: it is the deciding person's own text, checked against the
  // schema when decided (runs/tool-arguments.ts), and it runs as they wrote it.
  const key = approval.decision === "APPROVE" ? unreadableKey(call.arguments, options.inputSchemaOf(call.name)) : undefined;
  if (key !== undefined) return { type: "decline", output: unreadableKeyResult(call, key) };
  await options.write((tx) => options.approvals.markStarted(tx, approval.id, options.now()));
  return edited === null ? { type: "execute" } : { type: "execute", arguments: edited };
}
