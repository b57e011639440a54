// Run caps (domain/principal/run-caps.ts): RunCapsInput, which createApiKey and createAccessToken
// take, and RunCaps, which ApiKey.runCaps and Schedule.runCaps read back.
import { type RunCaps, RUN_CAP_AGENTS_MAX, storedCaps } from "../../domain/principal/run-caps.js";
import { DEFAULT_AGENT, DEFAULT_LIMITS, MAX_LIMITS, RUN_PRIORITY_RANGE } from "../../domain/run-bounds.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";
import { builder } from "../builder.js";

/** What an admission above a limit's cap, or without that limit, gets. */
const above = (name: string) =>
  `An admission asking for more is a ValidationError on \`limits.${name}\` naming the cap, and admits nothing; one without it takes the default, or the cap when lower.`;

export const RunCapsInput = builder.inputType("RunCapsInput", {
  description:
    "What runs a key or token may admit (admitRun, and the fires of the schedules it creates or updates). Every field is optional: omitted, no cap beyond the calling key's own, whose caps a new key or token also inherits field by field; asking for more than the calling key's cap, or an agent profile it does not allow, is a ValidationError naming `runCaps.<field>`.",
  fields: (t) => ({
    agents: t.stringList({
      description: `The agent profiles its runs may use (at most ${RUN_CAP_AGENTS_MAX}). Another profile is a ValidationError on \`agent\`, not a ForbiddenError: the credential may admit, only not that profile, and a client fixes the request by naming another. An admission naming none uses \`${DEFAULT_AGENT}\` when it is listed, otherwise the first listed.`,
    }),
    maxTurns: t.int({
      description: `The most turns a run may be given (limits.maxTurns; from 1 to ${groupedDigits(MAX_LIMITS.maxTurns)}; the default is ${DEFAULT_LIMITS.maxTurns}). ${above("maxTurns")}`,
    }),
    tokenBudget: t.int({
      description: `The largest token budget a run may be given (limits.tokenBudget; from 1 to ${groupedDigits(MAX_LIMITS.tokenBudget)}; the default is ${groupedDigits(DEFAULT_LIMITS.tokenBudget)}). ${above("tokenBudget")}`,
    }),
    deadlineSeconds: t.int({
      description: `The longest deadline a run may be given, in seconds (limits.deadlineSeconds; from 1 to ${groupedDigits(MAX_LIMITS.deadlineSeconds)}; the default is ${groupedDigits(DEFAULT_LIMITS.deadlineSeconds)}). ${above("deadlineSeconds")}`,
    }),
    maxPriority: t.int({
      description: `The highest priority a run may be given (from ${RUN_PRIORITY_RANGE.min} to ${RUN_PRIORITY_RANGE.max}): the priority orders the principal's own queued runs, so a cap keeps one user's runs from going ahead of the others'. An admission asking for more is a ValidationError on \`priority\` naming the cap; one without a priority takes 0, or the cap when it is below 0.`,
    }),
  }),
});

export const RunCapsObject = builder.objectRef<RunCaps>("RunCaps").implement({
  description: "The caps on the runs a key (or a schedule's fires) may admit; a field that is null has no cap beyond the server's own.",
  fields: (t) => ({
    agents: t.stringList({ nullable: true, description: "The agent profiles allowed; null: any.", resolve: (caps) => caps.agents ?? null }),
    maxTurns: t.int({ nullable: true, resolve: (caps) => caps.maxTurns ?? null }),
    tokenBudget: t.int({ nullable: true, resolve: (caps) => caps.tokenBudget ?? null }),
    deadlineSeconds: t.int({ nullable: true, resolve: (caps) => caps.deadlineSeconds ?? null }),
    maxPriority: t.int({ nullable: true, resolve: (caps) => caps.maxPriority ?? null }),
  }),
});

/** A stored caps column as RunCaps, or null when it holds none. */
export const runCapsOf = (value: unknown): RunCaps | null => storedCaps(value) ?? null;
