// The bounds every admission is held to, whoever admits: a run's default limits and the most the
// server allows, the range of its priority, and what an agent profile's name looks like. Run caps
// (domain/principal/run-caps.ts) narrow them per API key or access token.

export const DEFAULT_AGENT = "researcher";

/** An agent profile's name, as AGENTS_FILE and admissions spell it. */
export const AGENT_NAME = /^[a-z][a-z0-9_-]{0,63}$/;
export const AGENT_NAME_RULE = "must be an agent profile name such as researcher";

export const DEFAULT_LIMITS = { maxTurns: 20, tokenBudget: 200_000, deadlineSeconds: 1_800 } as const;

/** The highest limits any run may be admitted with. */
export const MAX_LIMITS = { maxTurns: 1_000, tokenBudget: 100_000_000, deadlineSeconds: 7 * 24 * 3600 } as const;

/** The limits a cap may bound (the cost caps are the admission's own: RunLimitsInput.maxCost). */
export const CAPPED_LIMITS = ["maxTurns", "tokenBudget", "deadlineSeconds"] as const;
export type CappedLimit = (typeof CAPPED_LIMITS)[number];

/** The range of a run's priority among its principal's own runs (AdmitRunInput.priority). */
export const RUN_PRIORITY_RANGE = { min: -1_000, max: 1_000 } as const;
