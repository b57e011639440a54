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
 * The calls a run waits on, as get_run shows them: their tool names and arguments with every
 * character a person would not see (bidi overrides, zero-width characters) shown as its escape
 * (visibleText), so an MCP client's user approves the command that runs, not one it seems to be.
 * A word that mixes Latin, Greek and Cyrillic letters ("gіthub" with a Cyrillic і) is shown after
 * a ⚠, and `mixedScripts` says which letters of each such word are not what they look like.
 * An MCP tool's call names the server and the tool as the server lists it (`mcpTool`,
 * `<server>/<tool>`): the name offered to the model is fitted to model APIs (`create.issue`
 * offered as `mcp__s__create_issue` pushes the real `create_issue` to `_2`).
 */
export async function pendingApprovals(client: DossierClient, runId: string) {
  const { node } = await client.request(RunApprovalsDocument, { id: runId });
  if (node?.__typename !== "Run") return [];
  return nodesOf(node.pendingApprovals).map(({ toolCallId, toolName, mcpTool, arguments: args, requestedAt, expiresAt }) => {
    const mixedScripts = mixedScriptNotes([toolName, mcpTool ?? "", args].join("\n"));
    return {
      toolCallId,
      toolName: visibleText(toolName),
      ...(mcpTool !== null && { mcpTool: visibleText(mcpTool) }),
      arguments: visibleText(args),
      ...(mixedScripts.length > 0 && { mixedScripts }),
      requestedAt,
      expiresAt,
    };
  });
}

export function registerDecideToolCall(server: McpServer, client: DossierClient, { ok, refused, guarded }: Answers): void {
  server.registerTool(
    "decide_tool_call",
    {
      title: "Decide a tool call",
      description:
        "Approves or rejects a tool call a run of yours waits on (get_run lists them while the run is WAITING). " +
        "APPROVE executes the call; EDIT executes it with the arguments you give (they must fit the tool's input schema); " +
        "REJECT tells the run's model the call was declined, with your reason. The first decision counts.",
      inputSchema: {
        runId: z.string().min(1).describe("The run's global id"),
        toolCallId: z.string().min(1).describe("The waiting call's toolCallId, from get_run"),
        decision: z.enum(["APPROVE", "EDIT", "REJECT"]),
        arguments: z
          .record(z.string(), z.unknown())
          .optional()
          .describe("EDIT only: the call's arguments as a JSON object, in place of the model's (get_run shows them)"),
        reason: z.string().max(2_000).optional().describe("Why; the model reads it with a rejection"),
      },
    },
    guarded(async ({ runId, toolCallId, decision, arguments: args, reason }) => {
      const { decideToolCall: result } = await client.request(DecideToolCallDocument, {
        input: { runId, toolCallId, decision, reason, ...(args === undefined ? {} : { arguments: args }) },
      });
      switch (result.__typename) {
        case "DecideToolCallSuccess":
          return ok({ decision: result.approval.decision, editedArguments: result.approval.editedArguments, run: result.run });
        case "AlreadyDecidedError":
          return refused(
            `Already decided: ${result.approval.decision}${result.approval.reason ? ` (${result.approval.reason})` : ""}. The first decision stands.`,
          );
        case "NotFoundError":
          return refused(`No waiting call ${toolCallId} of a run ${runId} is visible to this API key.`);
        default:
          return refused(`${result.__typename}: ${result.message}`);
      }
    }),
  );
}
