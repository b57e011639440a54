// The MCP server's list_schedules: a workspace's schedules (issue 41) — when each fires next,
// whether it is paused and why, and what its latest fire did.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { type DossierClient, WorkspaceSchedulesDocument } from "../../sdk/index.js";

type Answers = {
  ok: (value: unknown) => CallToolResult;
  refused: (message: string) => CallToolResult;
  guarded: <A>(handler: (args: A) => Promise<CallToolResult>) => (args: A) => Promise<CallToolResult>;
};

export function registerListSchedules(server: McpServer, client: DossierClient, { ok, refused, guarded }: Answers): void {
  server.registerTool(
    "list_schedules",
    {
      title: "List a workspace's schedules",
      description:
        "The schedules of one workspace, oldest first: cron or interval and time zone, the question each fire asks, the next fire, whether paused (and why), and the latest fire's status and run.",
      inputSchema: {
        workspaceId: z.string().describe("The workspace's id (from list_workspaces)"),
        first: z.number().int().min(1).max(100).optional().describe("How many (default 20, at most 100)"),
        after: z.string().optional().describe("endCursor of the previous page"),
      },
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ workspaceId, first, after }) => {
      const { workspace } = await client.request(WorkspaceSchedulesDocument, { workspaceId, first: first ?? 20, after });
      if (!workspace) return refused("Workspace not found.");
      return ok({
        schedules: workspace.schedules.edges.map(({ node }) => ({
          id: node.id,
          cron: node.cron,
          intervalSeconds: node.intervalSeconds,
          timezone: node.timezone,
          question: node.question,
          overlap: node.overlap,
          catchUp: node.catchUp,
          nextFireAt: node.nextFireAt,
          paused: node.paused,
          pausedReason: node.pausedReason,
          lastFire: node.lastFire && {
            fireTime: node.lastFire.fireTime,
            status: node.lastFire.status,
            reason: node.lastFire.reason,
            runId: node.lastFire.run?.id ?? null,
          },
        })),
        hasNextPage: workspace.schedules.pageInfo.hasNextPage,
        endCursor: workspace.schedules.pageInfo.endCursor,
      });
    }),
  );
}
