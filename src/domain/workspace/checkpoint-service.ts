// Checkpoints (W10–W13): a workspace's versioned research-progress record — a summary, open
// questions with stable ids, next steps — changed only by compare-and-swap on its revision.
// An update names the questions it adds or changes; the ones it omits stay as they were.
// Reading a checkpoint re-checks the eligibility of everything it was built on.
import { z } from "zod";
import type { CheckpointOrigin, CheckpointVersion, Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import { StaleRevisionError, ValidationError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { eligibilityOf } from "../research/eligibility.js";
import { nonBlank, parseInput } from "../validation.js";
import { findVisibleWorkspace, publishWorkspaceEvent, visibleWorkspace } from "./workspace-access.js";
import type { EventPublisher } from "../../events/topics.js";

export const QUESTION_STATUSES = ["OPEN", "RESOLVED"] as const;
export type QuestionStatus = (typeof QUESTION_STATUSES)[number];
export type CheckpointQuestion = { id: string; text: string; status: QuestionStatus };

const questionChange = z
  .object({
    id: z.string().trim().min(1).nullish(),
    text: nonBlank(2_000).nullish(),
    status: z.enum(QUESTION_STATUSES).nullish(),
  })
  .superRefine((question, ctx) => {
    if (!question.id && !question.text) ctx.addIssue({ code: "custom", path: ["text"], message: "is required for a new question" });
  });

export const checkpointChange = z.object({
  summary: nonBlank(20_000).nullish(),
  nextSteps: z.array(nonBlank(2_000)).max(50, "at most 50 next steps").nullish(),
  questions: z.array(questionChange).max(100, "at most 100 question changes").default([]),
});

const updateInput = checkpointChange.extend({
  workspaceId: z.string(),
  expectedRevision: z.number().int().min(0, "revisions start at 0 (no checkpoint yet)"),
});

export type CheckpointChange = z.input<typeof checkpointChange>;
export type UpdateCheckpointInput = z.input<typeof updateInput>;

export type Provenance = {
  origin: CheckpointOrigin;
  originRunId?: string | null;
  acceptedVersionIds?: string[];
  citedVersionIds?: string[];
  sourceVersionIds?: string[];
};

/** A checkpoint as it may be shown: its content only while everything it rests on is eligible. */
export type CheckpointRead =
  | { status: "AVAILABLE"; checkpoint: CheckpointVersion }
  | { status: "UNAVAILABLE"; checkpoint: CheckpointVersion; reason: string; sourceVersionId: string };

export class CheckpointService {
  constructor(private readonly deps: { prisma: PrismaClient; events: EventPublisher }) {}

  /** A user's update: applied only if `expectedRevision` is still the current revision. */
  async update(actor: Actor, input: UpdateCheckpointInput): Promise<CheckpointVersion> {
    const { workspaceId, expectedRevision, ...change } = parseInput(updateInput, input);
    return this.apply(actor, workspaceId, expectedRevision, change, { origin: "USER" });
  }

  /**
   * Applies a parsed change as revision expectedRevision + 1, in one transaction: the
   * workspace's revision is swapped first, so of two updates on one revision exactly one wins.
   */
  async apply(
    actor: Actor,
    workspaceId: string,
    expectedRevision: number,
    change: z.output<typeof checkpointChange>,
    provenance: Provenance,
  ): Promise<CheckpointVersion> {
    const after: AfterCommit = [];
    const created = await this.deps.prisma.$transaction((tx) =>
      this.applyIn(tx, { actor, workspaceId, expectedRevision, change, provenance }, after),
    );
    runAfterCommit(after);
    return created;
  }

  /** `apply` inside the caller's transaction (a run settling); the announcement is pushed to `after`. */
  async applyIn(
    tx: Prisma.TransactionClient,
    {
      actor,
      workspaceId,
      expectedRevision,
      change,
      provenance,
    }: { actor: Actor; workspaceId: string; expectedRevision: number; change: z.output<typeof checkpointChange>; provenance: Provenance },
    after: AfterCommit,
  ): Promise<CheckpointVersion> {
    // Everything that can refuse the change is decided before the swap, which is the last check:
    // inside a caller's transaction, a refusal must leave nothing written.
    const previous =
      expectedRevision === 0
        ? null
        : await tx.checkpointVersion.findUnique({ where: { workspaceId_revision: { workspaceId, revision: expectedRevision } } });
    const questions = mergeQuestions(questionsOf(previous), change.questions);
    const swapped = await tx.workspace.updateMany({
      where: { ...visibleWorkspace(actor, workspaceId), checkpointRevision: expectedRevision },
      data: { checkpointRevision: { increment: 1 } },
    });
    if (swapped.count === 0) {
      const current = await findVisibleWorkspace(tx, actor, workspaceId);
      throw new StaleRevisionError(expectedRevision, current.checkpointRevision);
    }
    const created = await tx.checkpointVersion.create({
      data: {
        workspaceId,
        revision: expectedRevision + 1,
        summary: change.summary ?? previous?.summary ?? null,
        nextSteps: change.nextSteps ?? (previous?.nextSteps as string[] | undefined) ?? [],
        questions,
        origin: provenance.origin,
        authorId: actor.principalId,
        originRunId: provenance.originRunId ?? null,
        acceptedVersionIds: provenance.acceptedVersionIds ?? [],
        citedVersionIds: provenance.citedVersionIds ?? [],
        // A model's suggestion builds on the revision before it and still rests on its sources.
        // An update by the owner is the owner's own judgement: it rests on what it names, so it
        // is also how a checkpoint withheld for a revoked source becomes readable again.
        sourceVersionIds: [
          ...new Set([
            ...(provenance.origin === "MODEL_SUGGESTION" ? ((previous?.sourceVersionIds as string[] | undefined) ?? []) : []),
            ...(provenance.sourceVersionIds ?? []),
          ]),
        ],
      },
    });
    after.push(() =>
      publishWorkspaceEvent(this.deps.events, { kind: "CHECKPOINT_UPDATED", workspaceId, checkpointRevision: created.revision }),
    );
    return created;
  }

  /** The current checkpoint, or null before the first. */
  async current(actor: Actor, workspaceId: string): Promise<CheckpointRead | null> {
    const workspace = await findVisibleWorkspace(this.deps.prisma, actor, workspaceId);
    if (workspace.checkpointRevision === 0) return null;
    const checkpoint = await this.deps.prisma.checkpointVersion.findUniqueOrThrow({
      where: { workspaceId_revision: { workspaceId, revision: workspace.checkpointRevision } },
    });
    return (await this.withAvailability([checkpoint]))[0]!;
  }

  /** Every revision, newest first. */
  async versions(actor: Actor, workspaceId: string, first: number): Promise<CheckpointRead[]> {
    await findVisibleWorkspace(this.deps.prisma, actor, workspaceId);
    const versions = await this.deps.prisma.checkpointVersion.findMany({
      where: { workspaceId },
      orderBy: { revision: "desc" },
      take: Math.max(0, Math.min(first, 100)),
    });
    return this.withAvailability(versions);
  }

  /** W13: a checkpoint built on a version that lost eligibility reads as UNAVAILABLE, naming it. */
  async withAvailability(checkpoints: CheckpointVersion[]): Promise<CheckpointRead[]> {
    const sourcesOf = (checkpoint: CheckpointVersion) => (checkpoint.sourceVersionIds as string[] | null) ?? [];
    const eligibility = await eligibilityOf(this.deps.prisma, checkpoints.flatMap(sourcesOf));
    return checkpoints.map((checkpoint): CheckpointRead => {
      for (const id of sourcesOf(checkpoint)) {
        const state = eligibility.get(id);
        if (!state) return { status: "UNAVAILABLE", checkpoint, reason: "a source it was built on no longer exists", sourceVersionId: id };
        if (!state.eligible) return { status: "UNAVAILABLE", checkpoint, reason: state.reason, sourceVersionId: state.culprit.versionId };
      }
      return { status: "AVAILABLE", checkpoint };
    });
  }
}

export function questionsOf(checkpoint: Pick<CheckpointVersion, "questions"> | null): CheckpointQuestion[] {
  return (checkpoint?.questions as CheckpointQuestion[] | null) ?? [];
}

/** Edits named questions, appends new ones with the next free id, and keeps the rest as they were. */
function mergeQuestions(
  previous: CheckpointQuestion[],
  changes: z.output<typeof questionChange>[],
): Prisma.InputJsonValue {
  const questions = previous.map((question) => ({ ...question }));
  let next = questions.reduce((max, q) => Math.max(max, Number(/^q(\d+)$/.exec(q.id)?.[1] ?? 0)), 0);
  changes.forEach((change, index) => {
    if (change.id) {
      const question = questions.find((q) => q.id === change.id);
      if (!question) throw new ValidationError([{ field: `questions.${index}.id`, message: `no question has the id "${change.id}"` }]);
      if (change.text) question.text = change.text;
      if (change.status) question.status = change.status;
    } else {
      next += 1;
      questions.push({ id: `q${next}`, text: change.text!, status: change.status ?? "OPEN" });
    }
  });
  return questions;
}
