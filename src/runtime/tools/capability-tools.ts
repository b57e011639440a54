// The tools a run gets beyond its always-on built-ins: load_skill over the skills pinned at the
// run's start that its agent profile allows (R13), the MCP tools of the principal's servers as connected at the start (R14),
// and the operator-enabled http_fetch and run_command (R15).
//
// A run an access token admitted is offered no MCP tools. Every MCP server acts with what its
// owner gave it (an API key, a GitHub token, …), not with the token's grants: Dossier's own MCP
// server attached with the team's key would read, search, admit and decide in every workspace
// of the team, beyond the workspaces the token may READ. Dossier can neither tell such a server
// the token's reach nor tell it reliably from any other server (a proxy may rename it and its
// tools), so such a run keeps the built-in tools, which read with the token's reach (material-reach.ts).
import type { RunRecord } from "../ports/run-state.js";
import { allowedBy } from "../../domain/capabilities/agent-profile-versions.js";
import { caught } from "../loop/attempt-start.js";
import { createMcpTools } from "../mcp/mcp-tools.js";
import type { McpRegistry } from "../mcp/mcp-registry.js";
import type { Tool } from "../ports/tool.js";
import type { TraceSink } from "../ports/trace-sink.js";
import { createLoadSkillTool } from "../skills/load-skill-tool.js";
import type { SkillCatalog } from "../skills/skill-catalog.js";
import { createHttpFetchTool, type FetchSettings } from "./http-fetch.js";
import { type CommandSettings, createRunCommandTool } from "./run-command.js";
import type { SandboxUsage } from "./sandbox-usage.js";

export type CapabilityTools = {
  skills: SkillCatalog;
  mcp?: McpRegistry;
  /** Offered when it allows at least one host. */
  fetch?: FetchSettings;
  /** Offered only when present (COMMANDS_ALLOWED). */
  commands?: CommandSettings;
};

/**
 * Starts the reads of a run's capability tools (its skills, its MCP servers' snapshot) at once;
 * the tools are built from them with the skills its agent profile allows. The MCP connections are
 * held until `ended` aborts (the attempt is over).
 */
export function startCapabilityTools(
  capabilities: CapabilityTools,
  {
    run,
    sandboxDir,
    usage,
    sink,
    signal,
    ended,
  }: { run: RunRecord; sandboxDir: string; usage?: SandboxUsage; sink: TraceSink; signal?: AbortSignal; ended?: AbortSignal },
): (skillsAllowed?: readonly string[]) => Promise<Tool[]> {
  const read = caught(
    Promise.all([
      capabilities.skills.forAgent(run.ownerId, run.agent),
      capabilities.mcp && run.admittedByToken === null ? createMcpTools(capabilities.mcp, run.ownerId, sink, signal, ended) : [],
    ]),
  );
  return async (skillsAllowed) => {
    const [all, mcpTools] = await read;
    const loadSkill = createLoadSkillTool(
      all.filter((skill) => allowedBy(skillsAllowed, skill.name)),
      sink,
    );
    return [
      ...(loadSkill ? [loadSkill] : []),
      ...(capabilities.fetch && capabilities.fetch.allowedHosts.length > 0 ? [createHttpFetchTool(capabilities.fetch)] : []),
      ...(capabilities.commands ? [createRunCommandTool(sandboxDir, capabilities.commands, usage)] : []),
      ...mcpTools,
    ];
  };
}
