// The tool port: one callable capability offered to the model.
import type { Transact } from "../../domain/transaction.js";
import type { ToolSchema } from "./model.js";
import type { SpanRef } from "./trace-sink.js";

/** What a tool knows of the run it serves: the run as admitted (owner, workspace, conversation, agent). */
export type ToolRun = {
  id: string;
  ownerId: string;
  conversationId: string;
  workspaceId: string | null;
  agent: string;
  question: string;
  /** The checkpoint revision the run was shown (W9), once its workspace context is written. */
  checkpointRevisionSeen: number | null;
  /** The access token that admitted the run, and the workspaces it could READ: what read_material may read for it (material-reach.ts). */
  admittedByToken: string | null;
  tokenReadableWorkspaceIds: string[];
};

export type ToolContext = {
  /** The run the call belongs to, as admitted (owner, workspace, conversation, agent). */
  run: ToolRun;
  runId: string;
  /** The id of the model's tool call this execution answers. */
  toolCallId: string;
  /** Aborted when the run is cancelled, times out, or this call's own timeout passes. */
  signal: AbortSignal;
  /** The tool call's span, for tools that record events of their own. */
  span: SpanRef;
  /**
   * The attempt's fenced transaction: a tool's database writes go through it, so a call of an
   * attempt that lost its run writes nothing.
   */
  write: Transact;
};

/** An MCP server as a run pinned it (its connection): `requireApproval` as the registry last synced it. */
export type PinnedMcpServer = { readonly serverId: string; readonly serverName: string; requireApproval: boolean };

export interface Tool {
  readonly schema: ToolSchema;
  /** Overrides the executor's default timeout for this tool. */
  readonly timeoutMs?: number;
  /**
   * Whether every call waits for a person's decision, whatever the approval rules say (an MCP server
   * that requires it). Asked anew for each call as it is considered: the answer may change while a run goes on.
   */
  readonly requiresApproval?: () => boolean;
  /**
   * An MCP tool's server as the run pinned it. A step's calls of its tools are gated with its
   * requireApproval as stored when they are considered (loop/mcp-servers-now.ts), besides this one's.
   */
  readonly mcpServer?: PinnedMcpServer;
  /**
   * An MCP tool's name before it was fitted to model APIs: `mcp__<server>__<tool as its server lists it>`,
   * neither cut nor replaced. Approval rules are matched against it as well as against the exposed name.
   */
  readonly fullName?: string;
  /**
   * Which MCP tool this is, `<server>/<tool as its server lists it>`: an approval request records it, and
   * an approved call whose exposed name has come to mean another tool does not run.
   */
  readonly mcpTool?: string;
  /**
   * What a person deciding on a call of this MCP tool is deciding on: a hash of the tool's description
   * and input schema as its server lists them, and of the server's endpoint (URL or command, and what
   * it connects with). An approval request records it; an approved call whose tool has changed since does not run.
   */
  readonly mcpDigest?: string;
  /** Returns the result text the model sees. Throwing makes an error result; it never aborts sibling calls. */
  execute(args: unknown, context: ToolContext): Promise<string>;
}

/** A tool error the model can read and recover from (bad arguments, not found, …). */
export class ToolError extends Error {
  override name = "ToolError";
}
