// The consumption ledger (W8): for each run and material, the stages it reached — DISCOVERED
// (listed to the model), SELECTED (frozen at admission or asked for), READ (passed the W7
// checks), CONSUMED (a model request carried the content) or UNAVAILABLE (with the reason).
// Entries are only ever added. READ and CONSUMED name the characters they cover — a range and
// the hash of exactly those characters — so a run that read 16,000 characters of a longer
// version never claims the whole of it; each range reaches each stage at most once per run, the
// other stages are reached at most once per material and run.
import type { MaterialCoverage, MaterialStage, Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { contentHash } from "./publication-service.js";

export type LedgerEntry = {
  runId: string;
  publicationId: string;
  version: number;
  publicationVersionId?: string | null;
  stage: MaterialStage;
  reason?: string | null;
  /** UNAVAILABLE: the publication of the version that broke eligibility, which `reason` names, and `reason` worded without naming it. */
  culpritPublicationId?: string | null;
  unnamedReason?: string | null;
  contentHash?: string | null;
  requestSpanId?: string | null;
  toolCallId?: string | null;
  rangeStart?: number | null;
  rangeEnd?: number | null;
  coverage?: MaterialCoverage | null;
};

/**
 * The part of a version's content a read covers: characters [start, end) in UTF-16 code units
 * (as JavaScript strings and read_material's offset count them), the text itself and its hash.
 */
export type ReadRange = { start: number; end: number; text: string; contentHash: string; coverage: MaterialCoverage };

/**
 * The part of `content` a read of at most `maxChars` characters from `offset` returns, or null
 * when the offset is past the end. Neither end splits a character that takes two UTF-16 units:
 * an offset inside one starts at that character, and a part that would end inside one ends before it.
 */
export function readRange(content: string, offset: number, maxChars: number): ReadRange | null {
  if (offset > 0 && offset >= content.length) return null;
  const splits = (at: number) => at > 0 && at < content.length && /[\uD800-\uDBFF]/.test(content[at - 1]!) && /[\uDC00-\uDFFF]/.test(content[at]!);
  const start = splits(offset) ? offset - 1 : offset;
  let end = Math.min(content.length, start + maxChars);
  if (splits(end)) end -= 1;
  const text = content.slice(start, end);
  return { start, end, text, contentHash: contentHash(text), coverage: start === 0 && end === content.length ? "WHOLE" : "PART" };
}

/** The ledger columns of a read range. */
export const rangeColumns = (range: Pick<ReadRange, "start" | "end" | "contentHash" | "coverage">) => ({
  rangeStart: range.start,
  rangeEnd: range.end,
  contentHash: range.contentHash,
  coverage: range.coverage,
});

type Writer = Pick<Prisma.TransactionClient, "materialUse">;

/** Records stages; a stage a material already reached in the run is left as first recorded. */
export async function recordStages(db: Writer, entries: LedgerEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await db.materialUse.createMany({ data: entries, skipDuplicates: true });
}

/**
 * The material reads of a run whose content has not yet been part of a model request:
 * READ entries without a CONSUMED entry for the same version and range.
 */
export async function unconsumedReads(prisma: PrismaClient, runId: string) {
  const uses = await prisma.materialUse.findMany({ where: { runId, stage: { in: ["READ", "CONSUMED"] } } });
  const key = (u: (typeof uses)[number]) => `${u.publicationId}@${u.version}:${u.rangeStart ?? ""}-${u.rangeEnd ?? ""}`;
  const consumed = new Set(uses.filter((u) => u.stage === "CONSUMED").map(key));
  return uses.filter((u) => u.stage === "READ" && !consumed.has(key(u)));
}

/** The exact versions a run consumed (any part of), each once, in the order it first consumed them. */
export async function consumedVersionIds(db: Pick<Prisma.TransactionClient, "materialUse">, runId: string): Promise<string[]> {
  const uses = await db.materialUse.findMany({
    where: { runId, stage: "CONSUMED", publicationVersionId: { not: null } },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: { publicationVersionId: true },
  });
  return [...new Set(uses.map((use) => use.publicationVersionId!))];
}

/**
 * The ledger as the runtime works with it. Reads go to the database the ledger was given; every
 * write takes the transaction the caller is in (a run attempt's fenced one), so an attempt that
 * lost its run adds nothing to the ledger.
 */
export class MaterialLedger {
  constructor(private readonly deps: { prisma: PrismaClient }) {}

  /** Records stages inside `tx`; see recordStages. */
  record(tx: Writer, entries: LedgerEntry[]): Promise<void> {
    return recordStages(tx, entries);
  }

  /** The run's READ entries no model request has carried yet; see unconsumedReads. */
  unconsumedReads(runId: string) {
    return unconsumedReads(this.deps.prisma, runId);
  }

  /** Every READ entry of the run: what it may cite. */
  reads(runId: string) {
    return this.deps.prisma.materialUse.findMany({ where: { runId, stage: "READ" } });
  }

  /** The exact versions the run consumed (any part of), as publication and version number, read inside `tx`. */
  async consumedVersions(tx: Pick<Prisma.TransactionClient, "materialUse" | "publicationVersion">, runId: string) {
    return tx.publicationVersion.findMany({
      where: { id: { in: await consumedVersionIds(tx, runId) } },
      select: { publicationId: true, version: true },
    });
  }
}
