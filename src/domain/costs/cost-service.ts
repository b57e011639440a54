// A principal's prices and what its runs cost (issue 40): setModelPrice and modelPrices, and the
// totals Workspace.cost and Principal.cost answer. A principal's own entries price its own runs
// only (its own model endpoints); the operator's entries price everyone's.
import { type ModelPrice, Prisma, type PrismaClient } from "../../generated/prisma/client.js";
import type { Actor } from "../principal/principal-service.js";
import { parsePriceEntry, upsertPriceEntry } from "./price-entries.js";
import { Decimal } from "./pricing.js";

/** Whose runs a total sums: a principal's, or a workspace's. */
export type CostScope = { ownerId: string } | { workspaceId: string };

export class CostService {
  constructor(private readonly deps: { prisma: PrismaClient; now?: () => Date }) {}

  /** Sets (creates or replaces) the caller's own price entry for a model from a time (default now). */
  setModelPrice(actor: Actor, input: unknown): Promise<ModelPrice> {
    const entry = parsePriceEntry(input);
    return upsertPriceEntry(this.deps.prisma, actor.principalId, entry, this.deps.now?.() ?? new Date());
  }

  /** The caller's own entries and the operator's, by model, the latest first. */
  modelPrices(actor: Actor): Promise<ModelPrice[]> {
    return this.deps.prisma.modelPrice.findMany({
      where: { OR: [{ principalId: actor.principalId }, { principalId: null }] },
      orderBy: [{ model: "asc" }, { principalId: { sort: "asc", nulls: "last" } }, { effectiveFrom: "desc" }, { id: "asc" }],
      take: 1000,
    });
  }

  /**
   * What the scope's runs cost (USD): without `since`, the sum of the runs' cost; with it, the
   * sum of the model calls that ended at or after it. Unpriced calls count nothing.
   */
  async costOf(scope: CostScope, since?: Date | null): Promise<Decimal> {
    const { prisma } = this.deps;
    if (!since) {
      const total = await prisma.run.aggregate({ where: scope, _sum: { cost: true } });
      return new Decimal(String(total._sum.cost ?? 0));
    }
    const whose = "ownerId" in scope ? Prisma.sql`r.owner_id = ${scope.ownerId}` : Prisma.sql`r.workspace_id = ${scope.workspaceId}`;
    // A run that finished before `since` has no call that ended after it.
    const [row] = await prisma.$queryRaw<{ total: string | null }[]>`
      SELECT sum(s.cost)::text AS total
      FROM run r JOIN trace t ON t.run_id = r.id JOIN span s ON s.trace_id = t.id
      WHERE ${whose} AND (r.finished_at IS NULL OR r.finished_at >= ${since})
        AND s.kind = 'MODEL_CALL' AND s.cost IS NOT NULL AND s.ended_at >= ${since}`;
    return new Decimal(row?.total ?? 0);
  }

  /**
   * Whether `costOf(scope, since)` leaves something out: a model call of the scope's runs had no
   * price (without `since`, any run's Run.costUnpriced; with it, such a call that ended at or after it).
   */
  async costUnpriced(scope: CostScope, since?: Date | null): Promise<boolean> {
    const { prisma } = this.deps;
    if (!since) return (await prisma.run.findFirst({ where: { ...scope, costUnpriced: true }, select: { id: true } })) !== null;
    const whose = "ownerId" in scope ? Prisma.sql`r.owner_id = ${scope.ownerId}` : Prisma.sql`r.workspace_id = ${scope.workspaceId}`;
    const rows = await prisma.$queryRaw<{ one: number }[]>`
      SELECT 1 AS one
      FROM run r JOIN trace t ON t.run_id = r.id JOIN span s ON s.trace_id = t.id
      WHERE ${whose} AND r.cost_unpriced AND (r.finished_at IS NULL OR r.finished_at >= ${since})
        AND s.kind = 'MODEL_CALL' AND s.cost_unpriced AND s.ended_at >= ${since}
      LIMIT 1`;
    return rows.length > 0;
  }
}
