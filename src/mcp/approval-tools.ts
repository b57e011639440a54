// The MCP server's part in human approval of tool calls: an agent (or the person behind it) that
// follows a run sees the calls it waits on (get_run, while the run is WAITING) and decides them
// with decide_tool_call, as the run's owner — the API key's principal.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { DecideToolCallDocument, type DossierClient, mixedScriptNotes, nodesOf, RunApprovalsDocument, visibleText } from "../../sdk/index.js";

type Answers = {
  ok: (value: unknown) => CallToolResult;
  refused: (message: string) => CallToolResult;
  guarded: <A>(handler: (args: A) => Promise<CallToolResult>) => (args: A) => Promise<CallToolResult>;
};

/**
 * The calls a run waits on, as get_run shows them: their ids, tool names and arguments with every
 * character a person would not see (bidi overrides, zero-width characters, stacked marks) shown as
 * its escape (visibleText), the arguments decoded as the tool gets them (ToolApproval.readableArguments:
 * `\u0072\u006d` shows as rm, a run of more than 32 blanks as its count, `⚠[40 spaces]`, a ⚠ of
 * their own as its escape, \u26A0) and `warnings` saying how many characters were hidden or
 * written as escapes, how many runs of blanks were counted, how many ⚠ of their own and words of
 * mixed scripts they hold, so an MCP client's user approves the command that runs, not one it seems to be;
 * `approvalId` names the request exactly (decide_tool_call), whatever the model named the call.
 * A word that mixes Latin, Greek and Cyrillic letters ("gіthub" with a Cyrillic і) is shown after
 * a ⚠, and `mixedScripts` says which letters of each such word are not what they look like.
 * An MCP tool's call names the server and the tool as the server lists it (`mcpTool`,
 * `<server>/<tool>`): the name offered to the model is fitted to model APIs (`create.issue`
 * offered as `mcp__s__create_issue` pushes the real `create_issue` to `_2`).
 */
export async function pendingApprovals(client: DossierClient, runId: string) {
  return (await waitingCalls(client, runId)).map(({ id, toolCallId, toolName, mcpTool, readableArguments: readable, requestedAt, expiresAt }) => {
    const { warnings } = readable;
    const mixedScripts = mixedScriptNotes([toolCallId, toolName, mcpTool ?? "", readable.text].join("\n"));
    return {
      approvalId: id,
      toolCallId: shownName(toolCallId),
      toolName: shownName(toolName),
      ...(mcpTool !== null && { mcpTool: shownName(mcpTool) }),
      arguments: readable.text,
      ...(warnings.length > 0 && { warnings }),
      ...(mixedScripts.length > 0 && { mixedScripts }),
      requestedAt,
      expiresAt,
    };
  });
}

/**
 * A name the model or an MCP server chose (a call id, a tool name) as get_run shows it: its own
 * backslashes as \u005C, then every hidden character as its escape (visibleText), so a literal
 * `\u200B` never shows as a real zero-width space. Letters of one script that look like another's
 * (Cyrillic "саӏӏ_1", "caⅼⅼ_1" with Roman numerals) still look alike: only approvalId names a call
 * for sure, and decide_tool_call takes a toolCallId only while it is the one call waiting.
 */
function shownName(name: string): string {
  return visibleText(name.replaceAll("\\", "\\u005C"));
}

/** The requests a run waits on, as the model wrote them. */
async function waitingCalls(client: DossierClient, runId: string) {
  const { node } = await client.request(RunApprovalsDocument, { id: runId });
  return node?.__typename === "Run" ? nodesOf(node.pendingApprovals) : [];
}

/**
 * The request decide_tool_call decides: the one named by approvalId; else, by toolCallId (as written
 * or as get_run shows it), only the one call a run waits on. With several waiting, ids a model chose
 * can look alike (a Cyrillic "саӏӏ_1" beside "call_1") and a person could name one while reading
 * another: approvalId must say which. Named by toolCallId, the request found is decided by its
 * approvalId, never one that came to take that id meanwhile.
 */
async function requestOf(
  client: DossierClient,
  runId: string,
  named: { approvalId?: string; toolCallId?: string },
): Promise<{ toolCallId: string; approvalId?: string } | Error> {
  const waiting = await waitingCalls(client, runId);
  if (named.approvalId)
    return { toolCallId: waiting.find((call) => call.id === named.approvalId)?.toolCallId ?? named.toolCallId ?? "", approvalId: named.approvalId };
  const text = named.toolCallId ?? "";
  if (waiting.length > 1) return new Error(`${waiting.length} calls wait: name the one you decide by its approvalId from get_run (call ids can look alike).`);
  const call = waiting[0];
  if (!call || (call.toolCallId !== text && shownName(call.toolCallId) !== text)) return { toolCallId: text };
  return { toolCallId: call.toolCallId, approvalId: call.id };
}

export function registerDecideToolCall(server: McpServer, client: DossierClient, { ok, refused, guarded }: Answers): void {
  server.registerTool(
    "decide_tool_call",
    {
      title: "Decide a tool call",
      description:
        "Approves or rejects a tool call a run of yours waits on (get_run lists them while the run is WAITING). " +
        "APPROVE executes the call; EDIT executes it with the arguments you give (they must fit the tool's input schema); " +
        "REJECT tells the run's model the call was declined, with your reason. The first decision counts. " +
        "Name the call by its approvalId from get_run: the exact way, deciding the request you were shown or nothing. " +
        "A toolCallId is the model's own name for the call, which another call's can look like: it is taken only while it is the one call waiting.",
      inputSchema: {
        runId: z.string().min(1).describe("The run's global id"),
        approvalId: z.string().min(1).optional().describe("The waiting request's approvalId, from get_run: names it exactly"),
        toolCallId: z.string().min(1).optional().describe("Without approvalId, while it is the only call waiting: its toolCallId, as get_run shows it"),
        decision: z.enum(["APPROVE", "EDIT", "REJECT"]),
        arguments: z
          .record(z.string(), z.unknown())
          .optional()
          .describe("EDIT only: the call's arguments as a JSON object, in place of the model's (get_run shows them)"),
        reason: z.string().max(2_000).optional().describe("Why; the model reads it with a rejection"),
      },
    },
    guarded(async ({ runId, approvalId, toolCallId, decision, arguments: args, reason }) => {
      if (!approvalId && !toolCallId) return refused("Name the call you decide: its approvalId (or toolCallId) from get_run.");
      const request = await requestOf(client, runId, { approvalId, toolCallId });
      if (request instanceof Error) return refused(request.message);
      const { decideToolCall: result } = await client.request(DecideToolCallDocument, {
        input: { runId, ...request, decision, reason, ...(args === undefined ? {} : { arguments: args }) },
      });
      switch (result.__typename) {
        case "DecideToolCallSuccess":
          return ok({ decision: result.approval.decision, editedArguments: result.approval.editedArguments, run: result.run });
        case "AlreadyDecidedError":
          return refused(
            `Already decided: ${result.approval.decision}${result.approval.reason ? ` (${result.approval.reason})` : ""}. The first decision stands.`,
          );
        case "NotFoundError":
          return refused(`No waiting call ${approvalId ?? toolCallId} of a run ${runId} is visible to this API key.`);
        default:
          return refused(`${result.__typename}: ${result.message}`);
      }
    }),
  );
}
