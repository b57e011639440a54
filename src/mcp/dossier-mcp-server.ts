// An MCP server that lets another agent work in Dossier workspaces (A8): list them, read the
// history catalog, read exact versions, read the checkpoint, admit a run and follow it.
// It is a client of a running Dossier server through the SDK — never a second process on the
// database — so it sees exactly what the API key's principal sees.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import {
  AdmitRunDocument,
  CheckpointVersionListsDocument,
  type DossierClient,
  DossierRequestError,
  HistoryCatalogDocument,
  readAllPages,
  ReadMaterialDocument,
  SearchHistoryDocument,
  RunDocument,
  WorkspaceCheckpointDocument,
  WorkspacesDocument,
} from "../../sdk/index.js";
import { pendingApprovals, registerDecideToolCall } from "./approval-tools.js";
import { registerCancelRun } from "./stop-tools.js";
import { registerListSchedules } from "./schedule-tools.js";

export const dossierMcpTools = [
  "list_workspaces",
  "history_catalog",
  "search_history",
  "read_material",
  "get_checkpoint",
  "admit_run",
  "get_run",
  "decide_tool_call",
  "cancel_run",
  "list_schedules",
] as const;

const ok = (value: unknown): CallToolResult => ({ content: [{ type: "text", text: JSON.stringify(value, null, 2) }] });
const refused = (message: string): CallToolResult => ({ content: [{ type: "text", text: message }], isError: true });
const notVisible = (what: string, id: string) =>
  refused(`No ${what} with id ${id} is visible to this API key (it does not exist, or belongs to someone else).`);

/** Typed errors of a payload union, as a message the calling agent can act on. */
const typedError = (payload: { __typename: string; message?: string }) => refused(`${payload.__typename}: ${payload.message ?? "refused"}`);

/** Request-level failures (a refused key, an unreachable server, limits) as tool errors, not crashes. */
function guarded<A>(handler: (args: A) => Promise<CallToolResult>): (args: A) => Promise<CallToolResult> {
  return async (args) => {
    try {
      return await handler(args);
    } catch (error) {
      if (error instanceof DossierRequestError) return refused(`Dossier refused the request: ${error.message}`);
      return refused(`Could not reach Dossier: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
}

const id = (what: string) => z.string().min(1).describe(`The ${what}'s global id`);

/** The page a checkpoint's version lists come in by default (the server's). */
const CHECKPOINT_LIST_PAGE = 100;

/** The checkpoint moved to another revision while its lists were read. */
class CheckpointMoved extends Error {}

/**
 * The workspace's current checkpoint with all its accepted versions and dependencies: the lists
 * come a page at a time, and every page must come from the revision the first one did — if the
 * checkpoint moves on meanwhile, it is read again. Null when the workspace is not visible.
 */
async function wholeCheckpoint(client: DossierClient, workspaceId: string) {
  for (let attempt = 1; ; attempt += 1) {
    const { node } = await client.request(WorkspaceCheckpointDocument, { workspaceId, first: 1 });
    if (node?.__typename !== "Workspace") return null;
    const checkpoint = node.checkpoint;
    if (checkpoint?.__typename !== "Checkpoint") return node;
    const after = async (list: "accepted" | "sources", last: string) => {
      const accepted = list === "accepted";
      const variables = {
        workspaceId,
        first: CHECKPOINT_LIST_PAGE,
        withAccepted: accepted,
        withSources: !accepted,
        [accepted ? "acceptedAfter" : "sourcesAfter"]: last,
      };
      const page = await client.request(CheckpointVersionListsDocument, variables).catch((error: unknown) => {
        // An `after` that is no longer in the list: the checkpoint moved on.
        throw error instanceof DossierRequestError ? new CheckpointMoved() : error;
      });
      const current = page.node?.__typename === "Workspace" ? page.node.checkpoint : null;
      if (current?.__typename !== "Checkpoint" || current.revision !== checkpoint.revision) throw new CheckpointMoved();
      return (accepted ? current.acceptedPublicationVersions : current.sourceDependencies) ?? null;
    };
    try {
      const acceptedPublicationVersions = await readAllPages(checkpoint.acceptedPublicationVersions, (last) => after("accepted", last));
      const sourceDependencies = await readAllPages(checkpoint.sourceDependencies, (last) => after("sources", last));
      return { ...node, checkpoint: { ...checkpoint, acceptedPublicationVersions, sourceDependencies } };
    } catch (error) {
      if (!(error instanceof CheckpointMoved) || attempt === 3) throw error;
    }
  }
}

export function createDossierMcpServer({ client }: { client: DossierClient }): McpServer {
  const server = new McpServer(
    { name: "dossier", version: "0.1.0" },
    {
      instructions:
        "Dossier keeps long-running research in workspaces. Start with list_workspaces, then history_catalog " +
        "to see which publication versions exist (no content), read_material to read one exact version, and " +
        "get_checkpoint for the current state of the research. Each version is a judgement formed at its as-of " +
        "time, not a fact of today. admit_run asks Dossier's own agent a question inside a workspace; follow it with get_run. " +
        "A run WAITING has tool calls that wait for its owner's decision: get_run lists them, decide_tool_call decides one. cancel_run stops a run: NOW, AFTER_TURN, or CONCLUDE (answer from what it gathered).",
    },
  );

  registerListWorkspaces(server, client);
  registerHistoryCatalog(server, client);
  registerSearchHistory(server, client);
  registerReadMaterial(server, client);
  registerGetCheckpoint(server, client);
  registerAdmitRun(server, client);
  registerGetRun(server, client);
  registerDecideToolCall(server, client, { ok, refused, guarded });
  registerCancelRun(server, client, { ok, refused, guarded });
  registerListSchedules(server, client, { ok, refused, guarded });
  return server;
}

function registerListWorkspaces(server: McpServer, client: DossierClient): void {
  server.registerTool(
    "list_workspaces",
    {
      title: "List workspaces",
      description: "The workspaces of this API key's principal, newest first, with their current goal.",
      inputSchema: {
        first: z.number().int().min(1).max(100).optional().describe("How many (default 20, at most 100)"),
        after: z.string().optional().describe("endCursor of the previous page"),
      },
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ first, after }) => {
      const { workspaces } = await client.request(WorkspacesDocument, { first: first ?? 20, after });
      return ok({
        workspaces: workspaces.edges.map(({ node }) => ({
          id: node.id,
          title: node.title,
          status: node.status,
          goal: { version: node.goal.version, statement: node.goal.statement },
          createdAt: node.createdAt,
        })),
        hasNextPage: workspaces.pageInfo.hasNextPage,
        endCursor: workspaces.pageInfo.endCursor,
      });
    }),
  );
}

function registerHistoryCatalog(server: McpServer, client: DossierClient): void {
  server.registerTool(
    "history_catalog",
    {
      title: "History catalog",
      description:
        "The publication versions a workspace can draw on (linked publications, runs and conversations): titles, " +
        "versions, as-of times and availability — no content. Says when it is truncated; when more publications " +
        "follow, pass pageInfo.endCursor as `after` for the next page.",
      inputSchema: {
        workspaceId: id("workspace"),
        first: z.number().int().min(1).max(200).optional().describe("At most this many publications (default 50)"),
        after: z.string().min(1).optional().describe("The endCursor of the previous page"),
      },
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ workspaceId, first, after }) => {
      const { node } = await client.request(HistoryCatalogDocument, { workspaceId, first: first ?? 50, after });
      if (node?.__typename !== "Workspace") return notVisible("workspace", workspaceId);
      return ok(node.historyCatalog);
    }),
  );
}

function registerSearchHistory(server: McpServer, client: DossierClient): void {
  server.registerTool(
    "search_history",
    {
      title: "Search the history",
      description:
        "Finds the publication versions a workspace can draw on by words of their title or content (full-text; " +
        '"quoted phrases", -excluded words and "or" work): ids, versions, as-of times and a snippet — never the whole content.',
      inputSchema: {
        workspaceId: id("workspace"),
        query: z.string().min(1).max(200).describe("The words to look for"),
        first: z.number().int().min(1).max(50).optional().describe("At most this many matches (default 20)"),
      },
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ workspaceId, query, first }) => {
      const { searchHistory } = await client.request(SearchHistoryDocument, { workspaceId, query, first });
      if (searchHistory.__typename === "NotFoundError") return notVisible("workspace", workspaceId);
      if (searchHistory.__typename !== "SearchHistorySuccess") return typedError(searchHistory);
      return ok({ hits: searchHistory.hits, complete: searchHistory.complete });
    }),
  );
}

function registerReadMaterial(server: McpServer, client: DossierClient): void {
  server.registerTool(
    "read_material",
    {
      title: "Read an exact version",
      description:
        "Reads exactly one version of a publication, with its content — never a newer one. Refused when the " +
        "version or one of its sources is no longer eligible (revoked, tampered with) or not yours.",
      inputSchema: {
        publicationId: id("publication"),
        version: z.number().int().min(1).describe("The version number, from the history catalog"),
      },
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ publicationId, version }) => {
      const { readMaterial } = await client.request(ReadMaterialDocument, { publicationId, version });
      if (!readMaterial.publicationVersion) {
        return refused(`Version ${version} cannot be read (${readMaterial.status}): ${readMaterial.reason ?? "unavailable"}`);
      }
      const v = readMaterial.publicationVersion;
      return ok({
        status: readMaterial.status,
        publication: v.publication,
        version: v.version,
        asOf: v.asOf,
        contentHash: v.contentHash,
        sources: v.sources.map((s) => ({ publicationId: s.publication.id, version: s.version })),
        content: v.content,
      });
    }),
  );
}

function registerGetCheckpoint(server: McpServer, client: DossierClient): void {
  server.registerTool(
    "get_checkpoint",
    {
      title: "Current checkpoint",
      description:
        "The workspace's current checkpoint: summary, open and resolved questions, next steps and the versions it " +
        "rests on; null before the first one. A checkpoint resting on a version that lost eligibility is withheld.",
      inputSchema: { workspaceId: id("workspace") },
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ workspaceId }) => {
      const node = await wholeCheckpoint(client, workspaceId);
      if (!node) return notVisible("workspace", workspaceId);
      return ok({ checkpointRevision: node.checkpointRevision, checkpoint: node.checkpoint });
    }),
  );
}

function registerAdmitRun(server: McpServer, client: DossierClient): void {
  server.registerTool(
    "admit_run",
    {
      title: "Admit a run",
      description:
        "Asks Dossier's research agent a question inside a workspace (its current goal is frozen on the run). " +
        "Returns the queued run; follow it with get_run. Pass an idempotencyKey to retry safely. " +
        "The run starts under the key's default agent profile, not the caller's: called by a Dossier run whose profile " +
        "holds calls for a person or limits its tools, this call waits for a person's approval first.",
      inputSchema: {
        workspaceId: id("workspace"),
        question: z.string().min(1).describe("What the run should find out"),
        materials: z
          .array(z.object({ publicationId: z.string().min(1), version: z.number().int().min(1) }))
          .optional()
          .describe("Exact publication versions to give the run"),
        idempotencyKey: z.string().min(1).optional(),
      },
    },
    guarded(async ({ workspaceId, question, materials, idempotencyKey }) => {
      const { admitRun } = await client.request(AdmitRunDocument, { input: { workspaceId, question, materials, idempotencyKey } });
      if (admitRun.__typename !== "AdmitRunSuccess") return typedError(admitRun);
      const { run } = admitRun;
      return ok({ replayed: admitRun.replayed, run: { id: run.id, status: run.status, question: run.question, createdAt: run.createdAt } });
    }),
  );
}

function registerGetRun(server: McpServer, client: DossierClient): void {
  server.registerTool(
    "get_run",
    {
      title: "Get a run",
      description:
        "A run's status; while it is WAITING, the tool calls that wait for your decision (an MCP tool's call names its server and the tool as the server lists it: mcpTool, <server>/<tool>), their arguments decoded as the tool gets them with every hidden character shown as its escape (\\u202E), every run of more than 32 blanks as its count (⚠[40 spaces]) and a ⚠ of their own as its escape (\\u26A0), each kind counted in warnings; once it has settled, its answer or why it failed.",
      inputSchema: { runId: id("run") },
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ runId }) => {
      const { node } = await client.request(RunDocument, { id: runId });
      if (node?.__typename !== "Run") return notVisible("run", runId);
      const waiting = node.status === "WAITING" ? { pendingApprovals: await pendingApprovals(client, runId) } : {};
      return ok({ id: node.id, status: node.status, question: node.question, answer: node.answer, failureReason: node.failureReason, ...waiting });
    }),
  );
}
