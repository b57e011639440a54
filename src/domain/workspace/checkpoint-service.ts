// Checkpoints (W10–W13): a workspace's versioned research-progress record — a summary, open
// questions with stable ids, next steps — changed only by compare-and-swap on its revision.
// An update names the questions it adds or changes; the ones it omits stay as they were.
// Each section (summary, each question, next steps) records who wrote it and what it rests on;
// reading a checkpoint re-checks the eligibility of every section's sources.
import { z } from "zod";
import type { CheckpointOrigin, CheckpointVersion, Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import { recordCheckpointEvent } from "../webhooks/webhook-events.js";
import { IneligibleSourceError, NotFoundError, StaleRevisionError, ValidationError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { eligibilityOf } from "../research/eligibility.js";
import { type MaterialReach, reachOf, withinReach } from "./material-reach.js";
import { nonBlank, parseInput } from "../validation.js";
import { allSources, nextSections, type SectionProvenance, type SectionRef, sectionList, sectionsOf } from "./checkpoint-sections.js";
import { findVisibleWorkspace, publishWorkspaceEvent, visibleWorkspace } from "./workspace-access.js";
import type { EventPublisher } from "../../events/topics.js";
import { checkpointQuestionsOf, nextStepsOf, toJsonColumn } from "../json-columns.js";

/** The most materials one checkpoint proposal may cite. */
export const CITED_MATERIALS_MAX = 50;
/** Characters of a checkpoint's summary. */
export const CHECKPOINT_SUMMARY_MAX = 20_000;
/** Characters of one question's text, or of one next step. */
export const CHECKPOINT_LINE_MAX = 2_000;
/** Next steps one checkpoint holds. */
export const CHECKPOINT_NEXT_STEPS_MAX = 50;

export const QUESTION_STATUSES = ["OPEN", "RESOLVED"] as const;
export type QuestionStatus = (typeof QUESTION_STATUSES)[number];
export type CheckpointQuestion = { id: string; text: string; status: QuestionStatus };

const questionChange = z
  .object({
    id: z.string().trim().min(1).nullish(),
    text: nonBlank(CHECKPOINT_LINE_MAX).nullish(),
    status: z.enum(QUESTION_STATUSES).nullish(),
  })
  .superRefine((question, ctx) => {
    if (!question.id && !question.text) ctx.addIssue({ code: "custom", path: ["text"], message: "is required for a new question" });
  });

export const checkpointChange = z.object({
  summary: nonBlank(CHECKPOINT_SUMMARY_MAX).nullish(),
  nextSteps: z.array(nonBlank(CHECKPOINT_LINE_MAX)).max(CHECKPOINT_NEXT_STEPS_MAX, `at most ${CHECKPOINT_NEXT_STEPS_MAX} next steps`).nullish(),
  questions: z.array(questionChange).max(100, "at most 100 question changes").default([]),
});

const updateInput = checkpointChange.extend({
  workspaceId: z.string(),
  expectedRevision: z.number().int().min(0, "revisions start at 0 (no checkpoint yet)"),
  /** Publication version ids the sections this update rewrites rest on. */
  sources: z.array(z.string().min(1)).max(50, "at most 50 sources").default([]),
});

export type CheckpointChange = z.input<typeof checkpointChange>;
export type UpdateCheckpointInput = z.input<typeof updateInput>;

export type Provenance = (
  | { origin: Extract<CheckpointOrigin, "USER">; originRunId?: null }
  /** A model's change always names the run that proposed it: the author of what it writes. */
  | { origin: Extract<CheckpointOrigin, "MODEL_SUGGESTION">; originRunId: string }
) & {
  acceptedVersionIds?: string[];
  citedVersionIds?: string[];
  /** What the sections this change rewrites rest on (a model's, besides the revision it built on); kept sections keep their own. */
  sourceVersionIds?: string[];
};

/** A checkpoint as it may be shown: its content only while everything it rests on is eligible. */
export type CheckpointRead =
  | { status: "AVAILABLE"; checkpoint: CheckpointVersion }
  | {
      status: "UNAVAILABLE";
      checkpoint: CheckpointVersion;
      reason: string;
      sourceVersionId: string;
      /** The sections resting on a source that lost eligibility: their content is withheld with the rest. */
      withheld: SectionRef[];
    };

export class CheckpointService {
  constructor(private readonly deps: { prisma: PrismaClient; events: EventPublisher }) {}

  /** A user's update: applied only if `expectedRevision` is still the current revision. */
  async update(actor: Actor, input: UpdateCheckpointInput): Promise<CheckpointVersion> {
    const { workspaceId, expectedRevision, sources, ...change } = parseInput(updateInput, input);
    return this.apply(actor, workspaceId, expectedRevision, change, { origin: "USER", sourceVersionIds: sources });
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
    const created = await this.deps.prisma.$transaction((tx) => this.applyIn(tx, { actor, workspaceId, expectedRevision, change, provenance }, after));
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
      expectedRevision === 0 ? null : await tx.checkpointVersion.findUnique({ where: { workspaceId_revision: { workspaceId, revision: expectedRevision } } });
    const writer = writerOf(actor, provenance, previous);
    const { summary, nextSteps, questions, sections, writerHolds } = nextContent(previous, change, writer);
    if (provenance.origin === "USER" && writer.sourceVersionIds.length > 0) {
      if (!writerHolds) {
        throw new ValidationError([{ field: "sources", message: "name sources only with a section this update writes: it keeps every section as it was" }]);
      }
      await requireEligibleSources(tx, actor, writer.sourceVersionIds);
    }
    await swapRevision(tx, actor, workspaceId, expectedRevision);
    const created = await tx.checkpointVersion.create({
      data: {
        workspaceId,
        revision: expectedRevision + 1,
        summary,
        nextSteps,
        questions,
        origin: provenance.origin,
        authorId: actor.principalId,
        originRunId: provenance.originRunId ?? null,
        acceptedVersionIds: provenance.acceptedVersionIds ?? [],
        citedVersionIds: provenance.citedVersionIds ?? [],
        // The revision rests on every section it holds — the ones it kept with their own
        // sources — so rewriting the sections built on a revoked source (and only that) is how
        // a withheld checkpoint becomes readable again.
        sourceVersionIds: allSources(sections),
        sections: toJsonColumn(sections),
      },
    });
    await recordCheckpointEvent(tx, actor.principalId, created, { events: this.deps.events, after });
    after.push(() => publishWorkspaceEvent(this.deps.events, { kind: "CHECKPOINT_UPDATED", workspaceId, checkpointRevision: created.revision }));
    return created;
  }

  /**
   * The current checkpoint, or null before the first. Why it is unavailable names a version only
   * within `reach` (default: the actor's; a run's workspace context passes its admitting token's).
   */
  async current(actor: Actor, workspaceId: string, reach: MaterialReach = reachOf(actor)): Promise<CheckpointRead | null> {
    const workspace = await findVisibleWorkspace(this.deps.prisma, actor, workspaceId);
    if (workspace.checkpointRevision === 0) return null;
    const checkpoint = await this.deps.prisma.checkpointVersion.findUniqueOrThrow({
      where: { workspaceId_revision: { workspaceId, revision: workspace.checkpointRevision } },
    });
    return (await this.withAvailability([checkpoint], actor, reach))[0]!;
  }

  /** Every revision, newest first. */
  async versions(actor: Actor, workspaceId: string, first: number): Promise<CheckpointRead[]> {
    await findVisibleWorkspace(this.deps.prisma, actor, workspaceId);
    const versions = await this.deps.prisma.checkpointVersion.findMany({
      where: { workspaceId },
      orderBy: { revision: "desc" },
      take: Math.max(0, Math.min(first, 100)),
    });
    return this.withAvailability(versions, actor);
  }

  /**
   * W13: a checkpoint with a section built on a version that lost eligibility reads as
   * UNAVAILABLE, naming that version and the sections resting on it. Every section it holds
   * counts, including the ones a later update kept unchanged. A reader (an access token) whose
   * reach holds not the culprit's publication is told neither its title nor why it was revoked.
   */
  async withAvailability(
    checkpoints: CheckpointVersion[],
    reader?: Pick<Actor, "principalId" | "access">,
    reach: MaterialReach = reader ? reachOf(reader) : null,
  ): Promise<CheckpointRead[]> {
    const sectionsByCheckpoint = checkpoints.map((checkpoint) => sectionList(checkpoint));
    const ids = sectionsByCheckpoint.flat().flatMap((s) => s.provenance.sourceVersionIds);
    const eligibility = await eligibilityOf(this.deps.prisma, ids);
    const culprits = [...eligibility.values()].flatMap((state) => (state.eligible ? [] : [state.culprit.publicationId]));
    const shown = reach === null || !reader ? null : await withinReach(this.deps.prisma, reader.principalId, reach, culprits);
    const problem = (id: string) => {
      const state = eligibility.get(id);
      if (!state) return { reason: "a source it was built on no longer exists", sourceVersionId: id };
      if (state.eligible) return null;
      const reason = shown === null || shown.has(state.culprit.publicationId) ? state.reason : state.unnamedReason;
      return { reason, sourceVersionId: state.culprit.versionId };
    };
    return checkpoints.map((checkpoint, index): CheckpointRead => {
      const sections = sectionsByCheckpoint[index]!;
      const withheld = sections.filter((s) => s.provenance.sourceVersionIds.some((id) => problem(id)));
      if (withheld.length === 0) return { status: "AVAILABLE", checkpoint };
      const first = withheld[0]!.provenance.sourceVersionIds.map(problem).find((p) => p !== null)!;
      return { status: "UNAVAILABLE", checkpoint, ...first, withheld };
    });
  }
}

/** The next revision's content: the change over the previous revision, each section with who wrote it. */
function nextContent(previous: CheckpointVersion | null, change: z.output<typeof checkpointChange>, writer: SectionProvenance) {
  const { questions, rewritten } = mergeQuestions(questionsOf(previous), change.questions);
  const summary = change.summary ?? previous?.summary ?? null;
  const nextSteps = change.nextSteps ?? (previous ? nextStepsOf(previous.nextSteps) : undefined) ?? [];
  const { sections, writerHolds } = nextSections({
    previous: previous && { summary: previous.summary, nextSteps: nextStepsOf(previous.nextSteps) ?? [], sections: sectionsOf(previous) },
    summary,
    nextSteps,
    rewrittenQuestions: rewritten,
    questionIds: questions.map((q) => q.id),
    writer,
  });
  return { summary, nextSteps, questions, sections, writerHolds };
}

/** The compare-and-swap: the workspace's revision moves on from `expectedRevision`, or the change is stale. */
async function swapRevision(tx: Prisma.TransactionClient, actor: Actor, workspaceId: string, expectedRevision: number): Promise<void> {
  const swapped = await tx.workspace.updateMany({
    where: { ...visibleWorkspace(actor, workspaceId), checkpointRevision: expectedRevision },
    data: { checkpointRevision: { increment: 1 } },
  });
  if (swapped.count === 0) {
    const current = await findVisibleWorkspace(tx, actor, workspaceId);
    throw new StaleRevisionError(expectedRevision, current.checkpointRevision);
  }
}

export function questionsOf(checkpoint: Pick<CheckpointVersion, "questions"> | null): CheckpointQuestion[] {
  return (checkpoint ? checkpointQuestionsOf(checkpoint.questions) : null) ?? [];
}

/**
 * Who wrote the sections a change rewrites, and what they rest on. A model was shown the whole
 * revision it built on, so what it writes rests on that revision's sources too, besides its
 * run's; the owner's rewrite is their own judgement and rests only on what they name.
 */
function writerOf(actor: Actor, provenance: Provenance, previous: CheckpointVersion | null): SectionProvenance {
  const named = provenance.sourceVersionIds ?? [];
  if (provenance.origin === "MODEL_SUGGESTION") {
    const sourceVersionIds = [...new Set([...named, ...(previous ? allSources(sectionsOf(previous)) : [])])];
    return { author: { kind: "MODEL_RUN", runId: provenance.originRunId, principalId: actor.principalId }, sourceVersionIds };
  }
  return { author: { kind: "OWNER", principalId: actor.principalId }, sourceVersionIds: [...new Set(named)] };
}

/**
 * The sources an owner names must be versions the owner may see (others' read as not found, so
 * their existence is not revealed) and eligible now: a section cannot be rebuilt on a revoked source.
 */
async function requireEligibleSources(tx: Prisma.TransactionClient, actor: Actor, ids: string[]): Promise<void> {
  const visible = await tx.publicationVersion.findMany({
    where: { id: { in: ids }, publication: { ownerId: actor.principalId } },
    select: { id: true },
  });
  const found = new Set(visible.map((v) => v.id));
  const missing = ids.find((id) => !found.has(id));
  if (missing) throw new NotFoundError("PublicationVersion", missing);
  const eligibility = await eligibilityOf(tx, ids);
  for (const id of ids) {
    const state = eligibility.get(id);
    if (state && !state.eligible) throw new IneligibleSourceError(id, state.reason);
  }
}

/**
 * Edits named questions, appends new ones with the next free id, and keeps the rest as they
 * were; `rewritten` holds the ids of the questions added or whose text or status changed.
 */
function mergeQuestions(
  previous: CheckpointQuestion[],
  changes: z.output<typeof questionChange>[],
): { questions: CheckpointQuestion[]; rewritten: Set<string> } {
  const questions = previous.map((question) => ({ ...question }));
  const rewritten = new Set<string>();
  let next = questions.reduce((max, q) => Math.max(max, Number(/^q(\d+)$/.exec(q.id)?.[1] ?? 0)), 0);
  changes.forEach((change, index) => {
    if (change.id) {
      const question = questions.find((q) => q.id === change.id);
      if (!question) throw new ValidationError([{ field: `questions.${index}.id`, message: `no question has the id "${change.id}"` }]);
      if ((change.text && change.text !== question.text) || (change.status && change.status !== question.status)) rewritten.add(question.id);
      if (change.text) question.text = change.text;
      if (change.status) question.status = change.status;
    } else {
      next += 1;
      questions.push({ id: `q${next}`, text: change.text!, status: change.status ?? "OPEN" });
      rewritten.add(`q${next}`);
    }
  });
  return { questions, rewritten };
}
