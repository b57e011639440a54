// The consumption ledger (W8): for each run and material, the stages it reached — DISCOVERED
// (listed to the model), SELECTED (frozen at admission or asked for), READ (passed the W7
// checks), CONSUMED (a model request carried the content) or UNAVAILABLE (with the reason).
// Entries are only ever added; a material reaches each stage at most once per run.
import type { MaterialStage, Prisma, PrismaClient } from "../../generated/prisma/client.js";

export type LedgerEntry = {
  runId: string;
  publicationId: string;
  version: number;
  publicationVersionId?: string | null;
  stage: MaterialStage;
  reason?: string | null;
  contentHash?: string | null;
  requestSpanId?: string | null;
  toolCallId?: string | null;
};

type Writer = Pick<Prisma.TransactionClient, "materialUse">;

/** Records stages; a stage a material already reached in the run is left as first recorded. */
export async function recordStages(db: Writer, entries: LedgerEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await db.materialUse.createMany({ data: entries, skipDuplicates: true });
}

/**
 * The material reads of a run whose content has not yet been part of a model request:
 * READ entries without a CONSUMED entry for the same version.
 */
export async function unconsumedReads(prisma: PrismaClient, runId: string) {
  const uses = await prisma.materialUse.findMany({ where: { runId, stage: { in: ["READ", "CONSUMED"] } } });
  const consumed = new Set(uses.filter((u) => u.stage === "CONSUMED").map((u) => `${u.publicationId}@${u.version}`));
  return uses.filter((u) => u.stage === "READ" && !consumed.has(`${u.publicationId}@${u.version}`));
}

/** The exact versions a run consumed, in the order it consumed them. */
export async function consumedVersionIds(db: Pick<Prisma.TransactionClient, "materialUse">, runId: string): Promise<string[]> {
  const uses = await db.materialUse.findMany({
    where: { runId, stage: "CONSUMED", publicationVersionId: { not: null } },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: { publicationVersionId: true },
  });
  return uses.map((use) => use.publicationVersionId!);
}
