// Dossier's retention rules as the week expiry asks them (see week-expiry.ts): the policies,
// pins and due traces of expiry.ts, read and written on the expiry's own session.
import type { SqlSession } from "../../../db/sql-session.js";
import type { Prisma } from "../../../generated/prisma/client.js";
import { expirableTraces, markExpired, type OperatorRetention } from "./expiry.js";
import type { ExpiryMode, WeekExpiryRules } from "./week-expiry.js";

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * expiry.ts speaks to a Prisma transaction's raw queries; the week expiry holds a plain session
 * (it needs session advisory locks and DDL). Both send the same parameterised SQL.
 */
function asRawClient(session: SqlSession): Pick<Prisma.TransactionClient, "$queryRawUnsafe" | "$executeRawUnsafe"> {
  return {
    $queryRawUnsafe: (sql: string, ...params: unknown[]) => session.query(sql, params),
    $executeRawUnsafe: async (sql: string, ...params: unknown[]) => (await session.query(sql, params)).length,
  } as unknown as Pick<Prisma.TransactionClient, "$queryRawUnsafe" | "$executeRawUnsafe">;
}

export function retentionWeekRules(operator: OperatorRetention): WeekExpiryRules {
  return {
    /** A week can hold a due trace only once its end is older than the shortest policy in force. */
    async dropWeeksEndingBefore(session, now) {
      const [row] = await session.query<{ days: number | null }>(
        `SELECT min(d)::int AS days FROM (SELECT days AS d FROM retention_policy WHERE days IS NOT NULL UNION ALL SELECT $1::int WHERE $1::int IS NOT NULL) ds`,
        [operator.days],
      );
      return row?.days == null ? null : new Date(now.getTime() - row.days * DAY_MS);
    },
    async classify(session, traceIds, now) {
      const raw = asRawClient(session);
      const due = await expirableTraces(raw, now, Math.max(1, traceIds.length), { operator, traceIds });
      const expired = await session.query<{ id: string; mode: ExpiryMode }>(
        `SELECT id, expired_mode::text AS mode FROM trace WHERE id = ANY($1::text[]) AND expired_at IS NOT NULL`,
        [traceIds],
      );
      return { due: new Map(due.map((trace) => [trace.traceId, trace.mode])), expired: new Map(expired.map((row) => [row.id, row.mode])) };
    },
    async markExpired(session, due, at) {
      await markExpired(
        asRawClient(session),
        [...due].map(([traceId, mode]) => ({ traceId, mode })),
        at,
      );
    },
  };
}
