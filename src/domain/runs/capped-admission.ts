// An admission held to the run caps of the credential that admits (domain/principal/run-caps.ts):
// what the request omits takes its default lowered to the cap (the agent: researcher when the caps
// allow it, otherwise the first they name; the priority: 0 or the cap below it), and what it asks
// above a cap, or an agent profile outside the caps, is a ValidationError naming the field and the
// cap. It is checked before anything is written: a refused admission leaves no run and no job.
import { ValidationError, type ValidationIssue } from "../errors.js";
import type { RunCaps } from "../principal/run-caps.js";
import { groupedDigits } from "../text/grouped-digits.js";
import { parseInput } from "../validation.js";
import { type Admission, type AdmitInput, admitInput } from "./admission-request.js";
import { CAPPED_LIMITS, DEFAULT_AGENT, DEFAULT_LIMITS } from "../run-bounds.js";

/** The admission a request asks for, within `caps` (undefined: uncapped). */
export function parseAdmission(input: AdmitInput, caps: RunCaps | undefined): Admission {
  const request = parseInput(admitInput, caps ? withCapDefaults(input, caps) : input);
  if (caps) assertWithinCaps(request, caps);
  return request;
}

/** The agent profile an admission that names none runs under. */
export function defaultAgent(caps: RunCaps | undefined): string {
  const allowed = caps?.agents;
  return !allowed || allowed.includes(DEFAULT_AGENT) || allowed.length === 0 ? DEFAULT_AGENT : allowed[0]!;
}

function withCapDefaults(input: AdmitInput, caps: RunCaps): AdmitInput {
  const limits = { ...input.limits };
  for (const name of CAPPED_LIMITS) {
    const cap = caps[name];
    if (limits[name] == null && cap !== undefined) limits[name] = Math.min(DEFAULT_LIMITS[name], cap);
  }
  const priority = input.priority ?? (caps.maxPriority !== undefined ? Math.min(0, caps.maxPriority) : input.priority);
  return { ...input, agent: input.agent ?? defaultAgent(caps), limits, priority };
}

/** Refuses an admission (its defaults applied) that the caps do not allow, naming each field and its cap. */
export function assertWithinCaps(request: Pick<Admission, "agent" | "limits" | "priority">, caps: RunCaps | undefined): void {
  if (!caps) return;
  const issues: ValidationIssue[] = [];
  if (caps.agents && !caps.agents.includes(request.agent)) {
    const allowed = caps.agents.length > 0 ? caps.agents.join(", ") : "none";
    issues.push({ field: "agent", message: `${request.agent} is not among the agent profiles the credential's run caps allow (${allowed})` });
  }
  const above = (field: string, cap: number, capName: string) =>
    issues.push({ field, message: `must be at most ${groupedDigits(cap)}, the credential's run cap (runCaps.${capName})` });
  for (const name of CAPPED_LIMITS) {
    const cap = caps[name];
    if (cap !== undefined && request.limits[name] > cap) above(`limits.${name}`, cap, name);
  }
  if (caps.maxPriority !== undefined && request.priority > caps.maxPriority) above("priority", caps.maxPriority, "maxPriority");
  if (issues.length > 0) throw new ValidationError(issues);
}
