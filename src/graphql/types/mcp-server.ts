// MCP servers (R14): each principal's configuration, with the live connection status and tool
// list as this instance sees them. Changes apply to runs started afterwards, without a restart.
import { MCP_SERVERS_PER_PRINCIPAL_MAX } from "../../domain/capabilities/mcp-server-service.js";
import { NotFoundError, ValidationError } from "../../domain/errors.js";
import { type JsonValue, namedValuesOf } from "../../domain/json-columns.js";
import { REDACTION_RULE } from "../../domain/sealed-url.js";
import type { McpServerStatus, McpSkippedTool } from "../../runtime/ports/mcp.js";
import { nameMcpTools } from "../../runtime/ports/mcp-tool-names.js";
import { McpTransport } from "../../generated/prisma/enums.js";
import type { McpServer } from "../../generated/prisma/client.js";
import type { GraphQLContext } from "../context.js";
import { builder } from "../builder.js";
import { describePage, LIST_PAGE, type KeysetList, readConnection, listConnection, LIST_ITEMS } from "../list-connection.js";
import { mine, ownedBy } from "./owned.js";

/** What a server's listed tools count for in a request's cost (server/page-cost.ts). */
const TOOLS_COUNTED = 100;

const MCP_SERVERS: KeysetList = {
  typename: "McpServer",
  order: [
    ["name", "asc"],
    ["id", "asc"],
  ],
  ...LIST_PAGE,
};

const McpTransportEnum = builder.enumType(McpTransport, {
  name: "McpTransport",
  description: "STDIO starts a local program (only where the operator allows it); HTTP speaks streamable HTTP to a URL.",
});

const McpConnectionStateEnum = builder.enumType("McpConnectionState", {
  values: {
    CONNECTING: { description: "Connecting and listing tools." },
    CONNECTED: { description: "Connected; its tools are offered to runs that start now." },
    FAILED: { description: "The last connection attempt failed (see `error`); the next run retries after a few seconds." },
    CLOSED: { description: "The server closed the connection (see `error`); the next run reconnects." },
    DISABLED: { description: "Configured with enabled: false; not connected." },
  },
});

type StatusView = McpServerStatus & { serverName: string };

const McpToolRef = builder
  .objectRef<{ name: string; exposedName: string; description?: string; descriptionCut?: string; inputSchemaReplaced?: string }>("McpTool")
  .implement({
    description: "A tool an MCP server offers.",
    fields: (t) => ({
      name: t.exposeString("name", { description: "The name the server gives it." }),
      exposedName: t.exposeString("exposedName", {
        description: "The name runs call it by: mcp__<server>__<tool>, made unique within the server. Agent profiles may allow `mcp__<server>__*`.",
      }),
      description: t.string({ nullable: true, resolve: (tool) => tool.description ?? null }),
      descriptionCut: t.string({
        nullable: true,
        description:
          "Why `description` is only the first 8,192 characters of the server's, followed by a note saying so (which runs are shown too): the server's takes more. Null when it is whole.",
        resolve: (tool) => tool.descriptionCut ?? null,
      }),
      inputSchemaReplaced: t.string({
        nullable: true,
        description:
          'Why runs are offered this tool with an open input schema (`{"type":"object"}`: any JSON object of arguments, which the server itself checks) instead of the one the server lists — which is not an object schema (a model API would refuse the whole request), or nests deeper than 64 levels or takes more than 65,536 characters as JSON. Null when runs get the server\'s.',
        resolve: (tool) => tool.inputSchemaReplaced ?? null,
      }),
    }),
  });

const McpSkippedToolRef = builder.objectRef<McpSkippedTool>("McpSkippedTool").implement({
  description:
    "A tool the server listed that runs are not offered: nothing could call it (no name, or one over 512 characters), or the tools kept before it already take most of the 4,194,304 characters a listing keeps (the server's other tools are offered); or its server's tools would take your servers' tools together (servers by name) past 1,000 tools or 8,388,608 characters (that server's tools are not offered at all).",
  fields: (t) => ({
    position: t.exposeInt("position", { description: "Where the server listed it: 0 for its first tool, counted across pages." }),
    reason: t.exposeString("reason", { description: "Why it is skipped, e.g. `it has no name`." }),
  }),
});

const McpServerStatusRef = builder.objectRef<StatusView>("McpServerStatus").implement({
  description: "This instance's connection to the server.",
  fields: (t) => ({
    state: t.field({ type: McpConnectionStateEnum, resolve: (status) => status.state }),
    error: t.string({ nullable: true, resolve: (status) => status.error }),
    // Counted at a typical size, not their bound (MCP_LIST_MAX_TOOLS, 1,000 by default): the
    // listing is held in memory, nothing is read for it.
    tools: t.field({ type: [McpToolRef], extensions: { [LIST_ITEMS]: TOOLS_COUNTED }, resolve: (status) => nameMcpTools(status.serverName, status.tools) }),
    skippedTools: t.field({
      type: [McpSkippedToolRef],
      extensions: { [LIST_ITEMS]: TOOLS_COUNTED },
      description:
        "Tools of the server's last listing that runs are not offered, with why; one such tool never costs the server its others. " +
        "Besides these, a run is offered MCP tools (servers by name, each server's tools by name) only while their definitions fit half the model's context window left after its reserves: the tools after are not offered to it, and its trace says which (a CONTEXT event with `mcpToolsLeftOut`).",
      resolve: (status) => status.skippedTools,
    }),
    connects: t.exposeInt("connects", {
      description: "Connections this instance has opened to the server; an update of another server does not add one.",
    }),
    draining: t.exposeInt("draining", {
      description: "Replaced connections still finishing calls in flight; each closes when its last call ends.",
    }),
  }),
});

/** One status read per request, however many servers are listed. */
const statusReads = new WeakMap<GraphQLContext, Promise<Map<string, McpServerStatus>>>();
function statusesFor(ctx: GraphQLContext): Promise<Map<string, McpServerStatus>> {
  let read = statusReads.get(ctx);
  if (!read) statusReads.set(ctx, (read = ctx.capabilities.mcp.status(ctx.actor.principalId)));
  return read;
}

const names = (value: JsonValue) => (namedValuesOf(value) ?? []).map((pair) => pair.name);

export const McpServerNode = builder.prismaNode("McpServer", {
  id: { field: "id" },
  nullable: true,
  findUnique: ownedBy,
  description:
    "An MCP server whose tools your runs may call: runs admitted with an API key, a sign-in or a schedule. Runs an access token admitted are offered none of its tools: it acts with the credentials you gave it, beyond the token's grants.",
  fields: (t) => ({
    name: t.exposeString("name", { description: "Unique per principal; the tool namespace mcp__<name>__…" }),
    transport: t.expose("transport", { type: McpTransportEnum }),
    command: t.exposeString("command", { nullable: true }),
    args: t.exposeStringList("args"),
    envNames: t.stringList({ description: "Names of the extra environment variables (values are never returned).", resolve: (s) => names(s.env) }),
    url: t.string({
      nullable: true,
      description: `HTTP: the endpoint. ${REDACTION_RULE}`,
      resolve: (server, _args, ctx) => (server.url === null ? null : ctx.services.mcpServers.shownUrl(server.url)),
    }),
    headerNames: t.stringList({ description: "Names of the extra HTTP headers (values are never returned).", resolve: (s) => names(s.headers) }),
    enabled: t.exposeBoolean("enabled"),
    requireApproval: t.exposeBoolean("requireApproval", {
      description: "Every call of this server's tools waits for your decision (decideToolCall) before it executes.",
    }),
    updatedAt: t.expose("updatedAt", { type: "DateTime" }),
    status: t.field({
      type: McpServerStatusRef,
      description: "Connects first if needed: at most 15 s to connect, then the listing within MCP_LIST_TIMEOUT_MS.",
      resolve: async (server, _args, ctx): Promise<StatusView> => {
        const unseen: McpServerStatus = { state: "CONNECTING", error: null, tools: [], skippedTools: [], connects: 0, draining: 0 };
        return { serverName: server.name, ...((await statusesFor(ctx)).get(server.id) ?? unseen) };
      },
    }),
  }),
});

builder.queryField("mcpServers", (t) =>
  listConnection(t, {
    type: "McpServer",
    name: "McpServerConnection",
    description: describePage("Your MCP servers, by name.", MCP_SERVERS),
    list: MCP_SERVERS,
    // The list holds at most MCP_SERVERS_PER_PRINCIPAL_MAX servers, whatever the page.
    extensions: { [LIST_ITEMS]: MCP_SERVERS_PER_PRINCIPAL_MAX },
    resolve: (query, _root, args, ctx) => readConnection<McpServer>(ctx.prisma.mcpServer, MCP_SERVERS, args, { scope: mine(ctx), query }),
  }),
);

const McpKeyValueInput = builder.inputType("McpKeyValueInput", {
  fields: (t) => ({ name: t.string({ required: true }), value: t.string({ required: true }) }),
});

const UpsertMcpServerInput = builder.inputType("UpsertMcpServerInput", {
  description: "The whole configuration of one server; lists left out are empty, requireApproval left out stays as it was.",
  fields: (t) => ({
    name: t.string({ required: true, description: "Lower-case letters, digits and -, at most 32; the key of the upsert." }),
    transport: t.field({ type: McpTransportEnum, required: true }),
    command: t.string({ description: "STDIO: the program (started without a shell)." }),
    args: t.stringList({ description: "STDIO: its arguments." }),
    env: t.field({ type: [McpKeyValueInput], description: "STDIO: extra environment variables." }),
    url: t.string({
      description:
        "HTTP: the streamable HTTP endpoint, stored encrypted (read back redacted: see McpServer.url); a path or query (a token in it) needs the server's SECRETS_KEY. It must lead outside the server's network unless the operator lists its host in MCP_HTTP_ALLOWED_HOSTS; an address inside it is a ValidationError, a name resolving inside it a FAILED status.",
    }),
    headers: t.field({ type: [McpKeyValueInput], description: "HTTP: extra request headers (e.g. authorization)." }),
    enabled: t.boolean({ description: "Default true." }),
    requireApproval: t.boolean({
      description:
        "True: every call of this server's tools waits for your decision before it executes (the run is WAITING meanwhile), whatever TOOL_APPROVALS says; from the next call on, also in runs already going. False turns that off. Left out (or null): the server keeps what it had (false for a new server), so an update that replaces only its headers or token keeps the hold.",
    }),
  }),
});

const UpsertMcpServerSuccess = builder.objectRef<{ mcpServer: McpServer }>("UpsertMcpServerSuccess").implement({
  fields: (t) => ({ mcpServer: t.field({ type: McpServerNode, resolve: (result) => result.mcpServer }) }),
});

builder.mutationField("upsertMcpServer", (t) =>
  t.field({
    type: UpsertMcpServerSuccess,
    description:
      "Creates or replaces the named server. Only this server reconnects; its old connection closes once its calls in flight have finished. Runs started afterwards see the new tools.",
    args: { input: t.arg({ type: UpsertMcpServerInput, required: true }) },
    errors: { types: [ValidationError], directResult: true, union: { name: "UpsertMcpServerPayload" } },
    resolve: async (_root, { input }, ctx) => ({ mcpServer: await ctx.services.mcpServers.upsert(ctx.actor, input) }),
  }),
);

const DeleteMcpServerInput = builder.inputType("DeleteMcpServerInput", {
  fields: (t) => ({ name: t.string({ required: true }) }),
});

const DeleteMcpServerSuccess = builder.objectRef<{ deletedName: string }>("DeleteMcpServerSuccess").implement({
  fields: (t) => ({ deletedName: t.exposeString("deletedName") }),
});

builder.mutationField("deleteMcpServer", (t) =>
  t.field({
    type: DeleteMcpServerSuccess,
    description: "Removes the server; its connection closes once its calls in flight have finished.",
    args: { input: t.arg({ type: DeleteMcpServerInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "DeleteMcpServerPayload" } },
    resolve: async (_root, { input }, ctx) => ({ deletedName: (await ctx.services.mcpServers.delete(ctx.actor, input)).name }),
  }),
);
