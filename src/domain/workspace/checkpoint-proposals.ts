// Checkpoint proposals (W11): what a run suggests for its workspace's checkpoint, recorded as it
// is made and decided when the run settles, by compare-and-swap against the checkpoint revision
// the run was shown. Every write here happens inside the transaction the caller is in — the run
// attempt's fenced one, or its settle transaction — so a run that lost its attempt records and
// decides nothing.
import { z } from "zod";
import type { CheckpointProposal, PrismaClient } from "../../generated/prisma/client.js";
import { jsonColumnReader, untypedJsonColumn } from "../json-columns.js";
import { toStoredJson } from "../text/stored-text.js";
import type { Tx } from "../transaction.js";
import { CITED_MATERIALS_MAX, checkpointChange } from "./checkpoint-service.js";

/** The highest version number a publication can have (a version is a 32-bit integer in the database). */
export const VERSION_NUMBER_MAX = 2_147_483_647;

/** One exact version of a publication, as a run names it: a number no version can have is a wrong argument, never a query. */
export const materialRef = z.object({
  publicationId: z.string().min(1),
  version: z.number().int().min(1).max(VERSION_NUMBER_MAX, `no version is numbered above ${VERSION_NUMBER_MAX}`),
});

/** A checkpoint change as a run proposes it, with the materials it read that support it. */
export const checkpointProposal = checkpointChange.extend({
  citedMaterials: z.array(materialRef).max(CITED_MATERIALS_MAX).default([]),
});

export type CheckpointProposalPayload = z.output<typeof checkpointProposal>;

/** CheckpointProposal.proposal of a PENDING proposal: as the model made it, checked when it was recorded. */
export const proposalOf = jsonColumnReader("checkpoint_proposal.proposal", checkpointProposal);

export type ProposalStatus = "PENDING" | "INVALID";
export type ProposalDecision = "ACCEPTED" | "STALE" | "INVALID" | "DROPPED";

export type NewProposal = {
  runId: string;
  workspaceId: string;
  expectedRevision: number;
  status: ProposalStatus;
  reason: string | null;
  /** As the model made it: an invalid proposal is kept with its NUL characters. */
  payload: unknown;
};

/** What a model's checkpoint change rests on: the versions the run published, those it cited, and their sources. */
export type ProposalProvenance = { acceptedVersionIds: string[]; citedVersionIds: string[]; sourceVersionIds: string[] };

export class CheckpointProposals {
  constructor(private readonly deps: { prisma: PrismaClient }) {}

  /** How many proposals the run has made, valid or not. */
  count(runId: string): Promise<number> {
    return this.deps.prisma.checkpointProposal.count({ where: { runId } });
  }

  record(tx: Tx, proposal: NewProposal): Promise<CheckpointProposal> {
    const { payload, ...columns } = proposal;
    return tx.checkpointProposal.create({ data: { ...columns, proposal: untypedJsonColumn(toStoredJson(payload)) } });
  }

  /** The run's proposals still to be decided, oldest first. */
  pending(tx: Tx, runId: string): Promise<CheckpointProposal[]> {
    return tx.checkpointProposal.findMany({
      where: { runId, status: "PENDING" },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    });
  }

  /** Decides a pending proposal; one already decided keeps its decision. */
  async decide(tx: Tx, id: string, status: ProposalDecision, reason: string | null, revision: number | null = null): Promise<void> {
    await tx.checkpointProposal.updateMany({
      where: { id, status: "PENDING" },
      data: { status, reason, revision, decidedAt: new Date() },
    });
  }

  /** The versions a run's proposal rests on: those it cites, those the run published, and what each was built on. */
  async provenanceOf(tx: Tx, runId: string, cited: CheckpointProposalPayload["citedMaterials"]): Promise<ProposalProvenance> {
    const citedVersions = cited.length
      ? await tx.publicationVersion.findMany({
          where: { OR: cited.map((m) => ({ publicationId: m.publicationId, version: m.version })) },
          select: { id: true, sources: { select: { sourceVersionId: true } } },
        })
      : [];
    const accepted = await tx.publicationVersion.findMany({
      where: { originRunId: runId },
      orderBy: { createdAt: "asc" },
      select: { id: true, sources: { select: { sourceVersionId: true } } },
    });
    const sources = new Set([...citedVersions, ...accepted].flatMap((v) => [v.id, ...v.sources.map((s) => s.sourceVersionId)]));
    return { acceptedVersionIds: accepted.map((v) => v.id), citedVersionIds: citedVersions.map((v) => v.id), sourceVersionIds: [...sources] };
  }
}
