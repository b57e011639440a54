// What a workspace run leaves behind (W8, W10, W11): the ledger's CONSUMED entries, written
// when a model request actually carried a material's content; the run's answer, saved through
// the publication path with the consumed versions as its sources; and its checkpoint proposal,
// decided by compare-and-swap against the revision the run saw.
import { DomainError, NotFoundError, StaleRevisionError } from "../../domain/errors.js";
import type { MaterialLedger } from "../../domain/research/material-ledger.js";
import type { PublicationService } from "../../domain/research/publication-service.js";
import { type CheckpointProposalPayload, type CheckpointProposals, proposalOf } from "../../domain/workspace/checkpoint-proposals.js";
import type { CheckpointService } from "../../domain/workspace/checkpoint-service.js";
import type { AfterCommit, Tx } from "../../domain/transaction.js";
import { forModel } from "../../domain/text/stored-text.js";
import { recordRunPublication, skippedBecause, tooManySources } from "../../domain/research/run-publication.js";
import type { RunRecord, SettleStep } from "../ports/run-state.js";
import type { Outcome } from "../loop/outcome.js";
import type { RunHooks } from "../loop/run-executor.js";
import { READ_MATERIAL_TOOL } from "./material-tools.js";
import { UNREADABLE_WORKSPACE_PROPOSAL, workspaceUnreadable } from "./unreadable-workspace.js";

/**
 * CONSUMED is written only for reads whose result the request carried verbatim — not cleared by
 * micro-compaction, not shown as a spill preview, not replaced by a repair note — and names the
 * range that result held, with its hash: what the model was shown, never more than was read.
 */
export function consumptionHook(deps: { ledger: Pick<MaterialLedger, "unconsumedReads" | "record"> }): RunHooks {
  return {
    async afterModelRequest({ run, write }, { span, carried, log }) {
      // A read is consumed only by a request that carried its result: a request that carried no
      // material's result consumes nothing, and the ledger is not read for it.
      const carriesMaterial = log.some((m) => m.role === "TOOL" && m.runId === run.id && m.toolName === READ_MATERIAL_TOOL && carried.has(m.id));
      if (!carriesMaterial) return;
      const reads = await deps.ledger.unconsumedReads(run.id);
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
      if (consumed.length > 0) await write((tx) => deps.ledger.record(tx, consumed));
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
 * Saves a successful workspace run's answer as a new publication (or, for a run admitted with
 * continuesPublicationId, as that publication's next version), built on the versions the
 * run consumed, and links it to the workspace (or records why not). It is written in the settle
 * transaction, so a run that does not settle — cancelled, taken over — publishes nothing. The
 * run records what it published, or why nothing (run_publication): an answer the rules for
 * people's text refuse — nothing visible in it, over the publication limit — is still the run's
 * answer, and the run still succeeds; so is one built on more versions than a publication may name.
 */
export function publishAnswerStep(deps: { publications: Pick<PublicationService, "publishIn">; ledger: Pick<MaterialLedger, "consumedVersions"> }): SettleStep {
  const skippedFor = (run: Pick<RunRecord, "workspaceId">, outcome: Outcome) =>
    skippedBecause(run, outcome.type === "final", outcome.type === "final" ? forModel(outcome.answer) : "");
  const step: SettleStep = async ({ tx, run, outcome, after }) => {
    const answer = outcome.type === "final" ? forModel(outcome.answer) : "";
    const skipped = skippedFor(run, outcome);
    if (skipped) {
      await recordRunPublication(tx, run.id, { outcome: skipped.outcome, reason: skipped.reason, publicationVersionId: null });
      return;
    }
    const consumed = await deps.ledger.consumedVersions(tx, run.id);
    // More consumed versions than a publication may name: not published, rather than published
    // with sources left out (run-publication.ts says why); the settle goes on and the run succeeds.
    const unnameable = tooManySources(consumed.length);
    if (unnameable) {
      await recordRunPublication(tx, run.id, { ...unnameable, publicationVersionId: null });
      return;
    }
    // A run admitted to continue a publication (a schedule's fire) publishes its next version,
    // labelled as of the run's admission; any other run starts a new publication.
    const { continuesPublicationId, createdAt } = await tx.run.findUniqueOrThrow({
      where: { id: run.id },
      select: { continuesPublicationId: true, createdAt: true },
    });
    const target = continuesPublicationId ? { publicationId: continuesPublicationId, asOf: createdAt } : { title: answerTitle(run.question) };
    // A publication is text for readers: NUL characters and unpaired surrogates of the answer are
    // published as ␀ and U+FFFD (the run's log and answer keep them exactly).
    const { version } = await deps.publications.publishIn(
      tx,
      { principalId: run.ownerId },
      { ...target, content: answer, sources: consumed, originRunId: run.id },
      after,
    );
    await recordRunPublication(tx, run.id, { outcome: "PUBLISHED", reason: null, publicationVersionId: version.id });
  };
  // A run that publishes nothing records why in the settle's one statement; a publication takes statements of its own.
  step.inStatement = (run, outcome) => {
    const skipped = skippedFor(run, outcome);
    return skipped ? { publication: skipped } : null;
  };
  return step;
}
/**
 * Decides the run's checkpoint proposals in the settle transaction: the last pending one is
 * applied if the run succeeded and the checkpoint is still at the revision the run saw; every
 * decision, including a refusal, is recorded and none fails the run. A run whose admitting token
 * may not READ its workspace applies none, and no decision of its names the checkpoint's revision
 * (propose_checkpoint refuses such a run; one it recorded before stays unapplied).
 */
export function decideProposalsStep(deps: {
  checkpoints: Pick<CheckpointService, "applyIn">;
  proposals: Pick<CheckpointProposals, "pending" | "decide" | "provenanceOf">;
}): SettleStep {
  const step: SettleStep = async ({ tx, run, outcome, after }) => {
    const pending = await deps.proposals.pending(tx, run.id);
    if (pending.length === 0) return;
    const last = pending.at(-1)!;
    const decide = (id: string, status: "ACCEPTED" | "STALE" | "INVALID" | "DROPPED", reason: string | null, revision: number | null = null) =>
      deps.proposals.decide(tx, id, status, reason, revision);
    if (workspaceUnreadable(run)) {
      for (const proposal of pending) await decide(proposal.id, "INVALID", UNREADABLE_WORKSPACE_PROPOSAL);
      return;
    }
    for (const earlier of pending.slice(0, -1)) await decide(earlier.id, "DROPPED", "a later proposal of the same run replaced it");
    if (outcome.type !== "final") {
      await decide(last.id, "DROPPED", "the run did not succeed");
      return;
    }
    try {
      const revision = await applyProposal({ tx, ...deps, after }, run, last.expectedRevision, proposalOf(last.proposal));
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
  // Nothing to decide for a run without pending proposals: the settle's one statement applies only then.
  step.inStatement = () => ({ noPendingProposals: true });
  return step;
}

async function applyProposal(
  deps: {
    tx: Tx;
    checkpoints: Pick<CheckpointService, "applyIn">;
    proposals: Pick<CheckpointProposals, "provenanceOf">;
    after: AfterCommit;
  },
  run: Pick<RunRecord, "id" | "ownerId" | "workspaceId">,
  expectedRevision: number,
  proposal: CheckpointProposalPayload,
): Promise<number> {
  const { tx } = deps;
  const { citedMaterials, ...change } = proposal;
  const provenance = await deps.proposals.provenanceOf(tx, run.id, citedMaterials);
  const checkpoint = await deps.checkpoints.applyIn(
    tx,
    {
      actor: { principalId: run.ownerId },
      workspaceId: run.workspaceId!,
      expectedRevision,
      change,
      provenance: { origin: "MODEL_SUGGESTION", originRunId: run.id, ...provenance },
    },
    deps.after,
  );
  return checkpoint.revision;
}
