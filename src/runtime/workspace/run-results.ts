// What a workspace run leaves behind (W8, W10, W11): the ledger's CONSUMED entries, written
// when a model request actually carried a material's content; the run's answer, saved through
// the publication path with the consumed versions as its sources; and its checkpoint proposal,
// decided by compare-and-swap against the revision the run saw.
import { DomainError, NotFoundError, StaleRevisionError } from "../../domain/errors.js";
import { consumedVersionIds, recordStages, unconsumedReads } from "../../domain/research/material-ledger.js";
import type { PublicationService } from "../../domain/research/publication-service.js";
import type { CheckpointService } from "../../domain/workspace/checkpoint-service.js";
import type { AfterCommit } from "../../domain/after-commit.js";
import { forModel } from "../../domain/text/stored-text.js";
import type { Prisma, PrismaClient } from "../../generated/prisma/client.js";
import type { RunRecord } from "../ports/run-state.js";
import type { SettleStep } from "../ports/run-state.js";
import type { RunHooks } from "../loop/run-executor.js";
import { type CheckpointProposalPayload, proposalOf } from "./material-tools.js";

/**
 * CONSUMED is written only for reads whose result the request carried verbatim — not cleared by
 * micro-compaction, not shown as a spill preview, not replaced by a repair note — and names the
 * range that result held, with its hash: what the model was shown, never more than was read.
 */
export function consumptionHook(prisma: PrismaClient): RunHooks {
  return {
    async afterModelRequest({ run, write }, { span, carried, log }) {
      const reads = await unconsumedReads(prisma, run.id);
      // The result that answered a read: this run's first tool result for the read's call logged
      // after it. A model may reuse call ids (across the runs of a conversation, or across turns),
      // so another result with the same id says nothing about this read.
      const resultOf = (read: (typeof reads)[number]) =>
        log.find((m) => m.role === "TOOL" && m.runId === run.id && m.toolCallId === read.toolCallId && m.createdAt >= read.createdAt);
      const carriedVerbatim = (read: (typeof reads)[number]) => {
        const result = resultOf(read);
        return result !== undefined && carried.has(result.id);
      };
      const consumed = reads.filter(carriedVerbatim).map((read) => ({
        runId: run.id,
        publicationId: read.publicationId,
        version: read.version,
        publicationVersionId: read.publicationVersionId,
        stage: "CONSUMED" as const,
        contentHash: read.contentHash,
        rangeStart: read.rangeStart,
        rangeEnd: read.rangeEnd,
        coverage: read.coverage,
        requestSpanId: span.id,
      }));
      if (consumed.length > 0) await write((tx) => recordStages(tx, consumed));
    },
  };
}

const TITLE_QUESTION_CHARS = 160;

export function answerTitle(question: string): string {
  const flat = question.replace(/\s+/g, " ").trim();
  const chars = [...flat];
  return `Answer: ${chars.length > TITLE_QUESTION_CHARS ? `${chars.slice(0, TITLE_QUESTION_CHARS - 1).join("")}…` : flat}`;
}

/**
 * Saves a successful workspace run's answer as a new publication, built on the versions the
 * run consumed, and links it to the workspace (or records why not). It is written in the settle
 * transaction, so a run that does not settle — cancelled, taken over — publishes nothing.
 */
export function publishAnswerStep(deps: { publications: PublicationService }): SettleStep {
  return async ({ tx, run, outcome, after }) => {
    if (outcome.type !== "final" || !run.workspaceId || outcome.answer.trim() === "") return;
    const consumed = await tx.publicationVersion.findMany({
      where: { id: { in: await consumedVersionIds(tx, run.id) } },
      select: { publicationId: true, version: true },
    });
    // A publication is text for readers: NUL characters and unpaired surrogates of the answer are
    // published as ␀ and U+FFFD (the run's log and answer keep them exactly).
    await deps.publications.publishIn(
      tx,
      { principalId: run.ownerId },
      { title: answerTitle(run.question), content: forModel(outcome.answer), sources: consumed, originRunId: run.id },
      after,
    );
  };
}

/**
 * Decides the run's checkpoint proposals in the settle transaction: the last pending one is
 * applied if the run succeeded and the checkpoint is still at the revision the run saw; every
 * decision, including a refusal, is recorded and none fails the run.
 */
export function decideProposalsStep(deps: { checkpoints: CheckpointService }): SettleStep {
  return async ({ tx, run, outcome, after }) => {
    const pending = await tx.checkpointProposal.findMany({
      where: { runId: run.id, status: "PENDING" },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    });
    if (pending.length === 0) return;
    const last = pending.at(-1)!;
    const decide = (id: string, status: "ACCEPTED" | "STALE" | "INVALID" | "DROPPED", reason: string | null, revision: number | null = null) =>
      tx.checkpointProposal.updateMany({
        where: { id, status: "PENDING" },
        data: { status, reason, revision, decidedAt: new Date() },
      });
    for (const earlier of pending.slice(0, -1)) await decide(earlier.id, "DROPPED", "a later proposal of the same run replaced it");
    if (outcome.type !== "final") {
      await decide(last.id, "DROPPED", "the run did not succeed");
      return;
    }
    try {
      const revision = await applyProposal({ tx, checkpoints: deps.checkpoints, after }, run, last.expectedRevision, proposalOf(last.proposal));
      await decide(last.id, "ACCEPTED", null, revision);
    } catch (error) {
      if (error instanceof StaleRevisionError) {
        await decide(last.id, "STALE", `the checkpoint moved to revision ${error.currentRevision} after the run saw revision ${error.expectedRevision}`);
      } else if (error instanceof NotFoundError) {
        await decide(last.id, "DROPPED", "the workspace no longer exists");
      } else if (error instanceof DomainError) {
        await decide(last.id, "INVALID", error.message);
      } else {
        throw error;
      }
    }
  };
}

async function applyProposal(
  deps: { tx: Prisma.TransactionClient; checkpoints: CheckpointService; after: AfterCommit },
  run: RunRecord,
  expectedRevision: number,
  proposal: CheckpointProposalPayload,
): Promise<number> {
  const { tx } = deps;
  const cited = proposal.citedMaterials.length
    ? await tx.publicationVersion.findMany({
        where: { OR: proposal.citedMaterials.map((m) => ({ publicationId: m.publicationId, version: m.version })) },
        select: { id: true, sources: { select: { sourceVersionId: true } } },
      })
    : [];
  const accepted = await tx.publicationVersion.findMany({
    where: { originRunId: run.id },
    orderBy: { createdAt: "asc" },
    select: { id: true, sources: { select: { sourceVersionId: true } } },
  });
  const sources = new Set([...cited, ...accepted].flatMap((v) => [v.id, ...v.sources.map((s) => s.sourceVersionId)]));
  const { citedMaterials: _cited, ...change } = proposal;
  const checkpoint = await deps.checkpoints.applyIn(
    tx,
    {
      actor: { principalId: run.ownerId },
      workspaceId: run.workspaceId!,
      expectedRevision,
      change,
      provenance: {
        origin: "MODEL_SUGGESTION",
        originRunId: run.id,
        acceptedVersionIds: accepted.map((v) => v.id),
        citedVersionIds: cited.map((v) => v.id),
        sourceVersionIds: [...sources],
      },
    },
    deps.after,
  );
  return checkpoint.revision;
}
