// Agent profiles: the system prompt a run executes under and the tools it may use.
// `researcher` is built in; AGENTS_FILE adds profiles or replaces it.
import type { AgentProfileVersions } from "../domain/capabilities/agent-profile-versions.js";
import type { RunRecord } from "./ports/run-state.js";

/**
 * An agent profile: the system prompt a run executes under and, optionally, the tools it may use
 * and the skills it may load (allow-lists of exact names or prefixes ending in `*`), and which
 * tool calls wait for a person's decision (tool-name pattern → "always" | "never").
 */
export type AgentProfile = { name: string; systemPrompt: string; tools?: string[]; skills?: string[]; toolApprovals?: Record<string, "always" | "never"> };

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
 * The profile a run executes: the version frozen at its admission, whatever the configuration says
 * now. A run admitted before profiles were versioned has none and runs its profile as configured.
 * Versions never change, so each is read once per process.
 */
export function frozenProfiles(
  stored: Pick<AgentProfileVersions, "version">,
  configured: Map<string, AgentProfile>,
): (run: Pick<RunRecord, "agent" | "agentProfileId">) => Promise<AgentProfile> {
  const versions = new Map<string, Promise<AgentProfile>>();
  return (run) => {
    const id = run.agentProfileId;
    if (!id) return Promise.resolve(profileIn(configured, run.agent));
    let version = versions.get(id);
    if (!version) {
      version = stored.version(id);
      versions.set(id, version);
      version.catch(() => versions.delete(id));
    }
    return version;
  };
}
