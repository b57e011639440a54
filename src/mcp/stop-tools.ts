// The MCP server's Stop: cancel_run stops a run of the API key's principal in one of cancelRun's
// modes — at once keeping the text written so far, after the current turn, or concluding with
// the best answer from the evidence gathered so far.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { CancelRunDocument, type DossierClient } from "../../sdk/index.js";

type Answers = {
  ok: (value: unknown) => CallToolResult;
  refused: (message: string) => CallToolResult;
  guarded: <A>(handler: (args: A) => Promise<CallToolResult>) => (args: A) => Promise<CallToolResult>;
};

export function registerCancelRun(server: McpServer, client: DossierClient, { ok, refused, guarded }: Answers): void {
  server.registerTool(
    "cancel_run",
    {
      title: "Stop a run",
      description:
        "Stops a queued, running or waiting run of yours. mode NOW (default) stops at once and keeps the text the model had written as the answer (answerComplete false); " +
        "AFTER_TURN lets the current turn's tool calls finish, then stops before the next model request; CONCLUDE stops the tools and asks the model once more, without tools, " +
        "for its best answer from what it gathered (the run then SUCCEEDS, concludedEarly true). A stop is final: a second one of another mode returns the first, except NOW, which escalates.",
      inputSchema: {
        runId: z.string().min(1).describe("The run's global id"),
        mode: z.enum(["NOW", "AFTER_TURN", "CONCLUDE"]).optional().describe("How the run stops; NOW by default"),
      },
    },
    guarded(async ({ runId, mode }) => {
      const { cancelRun: result } = await client.request(CancelRunDocument, { input: { runId, ...(mode && { mode }) } });
      switch (result.__typename) {
        case "CancelRunSuccess":
          return ok({ run: result.run });
        case "NotFoundError":
          return refused(`No run with id ${runId} is visible to this API key (it does not exist, or belongs to someone else).`);
        default:
          return refused(`${result.__typename}: ${result.message}`);
      }
    }),
  );
}
