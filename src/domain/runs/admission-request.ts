// An admission request (W4, W5): what admitRun and a schedule's fires accept — the run's agent,
// question, materials, limits (with their defaults), multitask strategy, priority and labels —
// and how two requests compare for idempotency (the fingerprint stored with the key).
import { createHash } from "node:crypto";
import { z } from "zod";
import { costLimit } from "../costs/caps.js";
import { versionRef } from "../research/publication-service.js";
import { nonBlank } from "../validation.js";
import { GOAL_STATEMENT_MAX } from "../workspace/workspace-service.js";
import { labelsFingerprint, metadataObject, tagList } from "./run-labels.js";
import { AGENT_NAME, AGENT_NAME_RULE, DEFAULT_AGENT, DEFAULT_LIMITS, MAX_LIMITS, RUN_PRIORITY_RANGE } from "../run-bounds.js";

/** What a new run does when its conversation already has a queued or running run (R19). */
export const MULTITASK_STRATEGIES = ["REJECT", "ENQUEUE", "INTERRUPT"] as const;
export type MultitaskStrategy = (typeof MULTITASK_STRATEGIES)[number];

/** The most materials one run may be admitted with (Run.materials reads that many, all of them). */
export const RUN_MATERIALS_MAX = 100;

export { DEFAULT_LIMITS, RUN_PRIORITY_RANGE } from "../run-bounds.js";

/** A run's limits as admissions (and schedules) take them: omitted ones take DEFAULT_LIMITS. */
export const runLimits = z.object({
  maxTurns: z
    .number()
    .int()
    .min(1)
    .max(MAX_LIMITS.maxTurns)
    .nullish()
    .transform((v) => v ?? DEFAULT_LIMITS.maxTurns),
  tokenBudget: z
    .number()
    .int()
    .min(1)
    .max(MAX_LIMITS.tokenBudget)
    .nullish()
    .transform((v) => v ?? DEFAULT_LIMITS.tokenBudget),
  deadlineSeconds: z
    .number()
    .int()
    .min(1)
    .max(MAX_LIMITS.deadlineSeconds)
    .nullish()
    .transform((v) => v ?? DEFAULT_LIMITS.deadlineSeconds),
  // Absent caps stay absent (undefined): the fingerprint of a request without them is unchanged.
  maxCost: costLimit.nullish().transform((v) => v ?? undefined),
  confirmCostAbove: costLimit.nullish().transform((v) => v ?? undefined),
});

export const admitInput = z.object({
  workspaceId: z.string().nullish(),
  conversationId: z.string().nullish(),
  agent: z
    .string()
    .regex(AGENT_NAME, AGENT_NAME_RULE)
    .nullish()
    .transform((v) => v ?? DEFAULT_AGENT),
  question: nonBlank(GOAL_STATEMENT_MAX),
  materials: z
    .array(versionRef)
    .max(RUN_MATERIALS_MAX, `at most ${RUN_MATERIALS_MAX} materials`)
    .nullish()
    .transform((v) => v ?? []),
  limits: runLimits.nullish().transform((v) => v ?? runLimits.parse({})),
  multitask: z
    .enum(MULTITASK_STRATEGIES)
    .nullish()
    .transform((v) => v ?? "REJECT"),
  idempotencyKey: z.string().trim().min(1, "must not be empty").max(200, "must be at most 200 characters").nullish(),
  priority: z
    .number()
    .int()
    .min(RUN_PRIORITY_RANGE.min)
    .max(RUN_PRIORITY_RANGE.max)
    .nullish()
    .transform((v) => v ?? 0),
  tags: tagList.nullish().transform((v) => v ?? []),
  metadata: metadataObject.nullish().transform((v) => v ?? {}),
  /**
   * Internal (not in AdmitRunInput): the publication the run's answer is published as the next
   * version of, instead of a new publication — a schedule's fires continue the publication its
   * first fire created. It must be the principal's.
   */
  continuesPublicationId: z.string().nullish(),
});

export type AdmitInput = z.input<typeof admitInput>;
export type Admission = z.output<typeof admitInput>;

/**
 * The request as compared for idempotency: materials as a set, limits after defaults. The
 * multitask strategy is left out: a replay returns the run admitted first, whatever it says.
 */
export function fingerprintOf(request: Admission): string {
  const materials = [...new Set(request.materials.map((m) => `${m.publicationId}@${m.version}`))].sort();
  const normalised = {
    workspaceId: request.workspaceId ?? null,
    conversationId: request.conversationId ?? null,
    agent: request.agent,
    question: request.question,
    materials,
    limits: request.limits,
    // Only when given: keys stored before priorities existed keep matching their requests.
    ...(request.priority !== 0 ? { priority: request.priority } : {}),
    ...(request.continuesPublicationId ? { continuesPublicationId: request.continuesPublicationId } : {}),
    ...labelsFingerprint(request),
  };
  return createHash("sha256").update(JSON.stringify(normalised)).digest("hex");
}

/** Each publication version once, in the order first given. */
export function distinct(materials: Admission["materials"]): Admission["materials"] {
  return [...new Map(materials.map((m) => [`${m.publicationId}@${m.version}`, m])).values()];
}
