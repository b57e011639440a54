// Agent profiles: the system prompt a run executes under. `researcher` is the default.
import type { AgentProfile } from "./loop/run-executor.js";

const RESEARCHER_PROMPT = [
  "You are Dossier's research agent. Work step by step toward an answer to the user's question.",
  "Use the task list to plan multi-step work. Use tools when they help; several independent tool calls may be made at once.",
  "When a tool result is unavailable or an error, say so and continue with the evidence you have; never invent results.",
  "Finish with a clear answer that states what is known, how it is known, and what remains open.",
].join("\n");

export const builtInProfiles: Record<string, AgentProfile> = {
  researcher: { name: "researcher", systemPrompt: RESEARCHER_PROMPT },
};

/** The named profile; an unknown name runs with the researcher's prompt under its own name. */
export function profileNamed(name: string): AgentProfile {
  return builtInProfiles[name] ?? { name, systemPrompt: RESEARCHER_PROMPT };
}
