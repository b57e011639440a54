// Run caps: what runs an API key or an access token may admit — which agent profiles, at most how
// many turns, tokens and seconds, and how high a priority. A key's caps are stored with it
// (ApiKey.runCaps), a token's travel in its signed claims, a schedule's are those of the
// credential that created or last updated it. A key or token made by a capped key is held to that
// key's caps: it may ask for narrower ones, never wider, and what it omits it inherits. Admissions
// apply them (domain/runs/capped-admission.ts).
import { z } from "zod";
import { ValidationError, type ValidationIssue } from "../errors.js";
import { groupedDigits } from "../text/grouped-digits.js";
import { AGENT_NAME, AGENT_NAME_RULE, CAPPED_LIMITS, MAX_LIMITS, RUN_PRIORITY_RANGE } from "../run-bounds.js";

export type RunCaps = {
  agents?: string[];
  maxTurns?: number;
  tokenBudget?: number;
  deadlineSeconds?: number;
  maxPriority?: number;
};

/** The numeric caps: the three limits, and the priority. */
export const NUMERIC_CAPS = [...CAPPED_LIMITS, "maxPriority"] as const;

export const RUN_CAP_AGENTS_MAX = 50;

const limitCap = (max: number) =>
  z
    .number()
    .int()
    .min(1, `must be from 1 to ${groupedDigits(max)}`)
    .max(max, `must be from 1 to ${groupedDigits(max)}`)
    .nullish();

/** What createApiKey and createAccessToken accept as `runCaps` (every field optional). */
export const runCapsInput = z
  .object({
    agents: z
      .array(z.string().regex(AGENT_NAME, AGENT_NAME_RULE))
      .min(1, "must name at least one agent profile (omit it for no cap)")
      .max(RUN_CAP_AGENTS_MAX, `at most ${RUN_CAP_AGENTS_MAX} agent profiles`)
      .nullish(),
    maxTurns: limitCap(MAX_LIMITS.maxTurns),
    tokenBudget: limitCap(MAX_LIMITS.tokenBudget),
    deadlineSeconds: limitCap(MAX_LIMITS.deadlineSeconds),
    maxPriority: z
      .number()
      .int()
      .min(RUN_PRIORITY_RANGE.min, `must be from ${RUN_PRIORITY_RANGE.min} to ${RUN_PRIORITY_RANGE.max}`)
      .max(RUN_PRIORITY_RANGE.max, `must be from ${RUN_PRIORITY_RANGE.min} to ${RUN_PRIORITY_RANGE.max}`)
      .nullish(),
  })
  .nullish();

export type RunCapsInput = z.input<typeof runCapsInput>;

/** The caps with their absent fields left out; undefined when none is set (no cap at all). */
function compact(caps: z.output<typeof runCapsInput>): RunCaps | undefined {
  if (!caps) return undefined;
  const result: RunCaps = {};
  if (caps.agents) result.agents = [...new Set(caps.agents)];
  for (const name of NUMERIC_CAPS) if (caps[name] != null) result[name] = caps[name];
  return Object.keys(result).length > 0 ? result : undefined;
}

/**
 * The caps stored with a key or schedule, or carried by a token's claims (null or absent: none).
 * Something else there is refused rather than taken for "no cap".
 */
export function storedCaps(value: unknown): RunCaps | undefined {
  if (value == null) return undefined;
  const parsed = runCapsInput.safeParse(value);
  if (!parsed.success) throw new Error(`stored run caps are malformed: ${JSON.stringify(value)}`);
  return compact(parsed.data);
}

/**
 * The caps of a key or token made by a credential capped by `parent` (undefined: uncapped), as
 * asked: each field given must lie within the parent's (a ValidationError naming
 * `runCaps.<field>` otherwise), each one omitted inherits the parent's.
 */
export function narrowCaps(parent: RunCaps | undefined, asked: RunCapsInput): RunCaps | undefined {
  const wanted = compact(asked) ?? {};
  const issues: ValidationIssue[] = [];
  const result: RunCaps = {};
  if (wanted.agents) {
    const outside = parent?.agents ? wanted.agents.filter((agent) => !parent.agents!.includes(agent)) : [];
    if (outside.length > 0) {
      issues.push({
        field: "runCaps.agents",
        message: `may name only agent profiles the calling key's run caps allow (${parent!.agents!.join(", ")}), not ${outside.join(", ")}`,
      });
    }
    result.agents = wanted.agents;
  } else if (parent?.agents) result.agents = [...parent.agents];
  for (const name of NUMERIC_CAPS) {
    const cap = parent?.[name];
    const value = wanted[name];
    if (value !== undefined && cap !== undefined && value > cap) {
      issues.push({ field: `runCaps.${name}`, message: `must be at most ${groupedDigits(cap)}, the calling key's own cap` });
    }
    const chosen = value ?? cap;
    if (chosen !== undefined) result[name] = chosen;
  }
  if (issues.length > 0) throw new ValidationError(issues);
  return compact(result);
}

/** The tighter of two sets of caps, field by field (the agents both allow, the lower of two numbers). */
export function tighterCaps(a: RunCaps | undefined, b: RunCaps | undefined): RunCaps | undefined {
  if (!a || !b) return a ?? b;
  const result: RunCaps = {};
  if (a.agents && b.agents) result.agents = a.agents.filter((agent) => b.agents!.includes(agent));
  else if (a.agents ?? b.agents) result.agents = [...(a.agents ?? b.agents)!];
  for (const name of NUMERIC_CAPS) {
    const values = [a[name], b[name]].filter((v): v is number => v !== undefined);
    if (values.length > 0) result[name] = Math.min(...values);
  }
  return result;
}
