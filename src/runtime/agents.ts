// Agent profiles: the system prompt a run executes under and the tools it may use.
// `researcher` is built in; AGENTS_FILE adds profiles or replaces it.
import type { AgentProfile } from "../config.js";

export type { AgentProfile };

const RESEARCHER_PROMPT = [
  "You are Dossier's research agent. Work step by step toward an answer to the user's question.",
  "Use the task list to plan multi-step work. Use tools when they help; several independent tool calls may be made at once.",
  "When a tool result is unavailable or an error, say so and continue with the evidence you have; never invent results.",
  "Finish with a clear answer that states what is known, how it is known, and what remains open.",
].join("\n");

export const builtInProfiles: AgentProfile[] = [{ name: "researcher", systemPrompt: RESEARCHER_PROMPT }];

/** Built-in profiles overlaid with configured ones (a configured profile replaces one of the same name). */
export function agentProfiles(configured: AgentProfile[] = []): Map<string, AgentProfile> {
  return new Map([...builtInProfiles, ...configured].map((profile) => [profile.name, profile]));
}

/**
 * The named profile. Admission accepts only configured names; a run admitted under a profile
 * that was removed from the configuration since runs with the researcher's prompt under its name.
 */
export function profileIn(profiles: Map<string, AgentProfile>, name: string): AgentProfile {
  return profiles.get(name) ?? { name, systemPrompt: RESEARCHER_PROMPT };
}

/**
 * Whether a profile's `tools` allow-list admits a tool. Entries are exact names, or a prefix
 * ending in `*`: `mcp__github__*` admits every tool of the MCP server `github`, `mcp__*` every
 * MCP tool. Without a list, every tool is admitted.
 */
export function toolAllowed(allowList: readonly string[] | undefined, name: string): boolean {
  if (!allowList) return true;
  return allowList.some((entry) => (entry.endsWith("*") ? name.startsWith(entry.slice(0, -1)) : entry === name));
}
