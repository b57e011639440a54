// The one read before every model request (run-executor.ts): the stop and pause asked of the run,
// whether steering inputs wait, and its cost caps with what was spent against each — the run's
// cost, its principal's spend today (the per-day counter row) and, when its workspace has a
// monthly budget, what the workspace's runs admitted this UTC month cost. One statement, or a
// column of another one: the next turn's read rides in the last tool result's log append.
import { queryRows } from "../../db/direct-statements.js";
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { CarriedRead } from "../transaction.js";
import type { CancelMode } from "../../generated/prisma/enums.js";
import { type Confirmation, type CostState, decimalOrNull } from "../costs/caps.js";

export type RunRequests = { stop: CancelMode | null; pause: boolean; inputs: boolean; costs: CostState };

type Row = {
  stop_mode: CancelMode | null;
  pause: boolean;
  inputs: boolean;
  cost: string;
  max_cost: string | null;
  confirm_cost_above: string | null;
  confirmation: "APPROVE" | "REJECT" | "EDIT" | "OPEN" | null;
  daily_limit: string | null;
  daily_spent: string | null;
  monthly_budget: string | null;
  monthly_spent: string | null;
};

/** The read, its run id and operator default daily limit as parameters `run` and `limit` ($n). */
const sqlOf = (run: string, limit: string) => `
  SELECT r.stop_mode::text AS stop_mode, r.pause_requested_at IS NOT NULL AS pause,
         EXISTS (SELECT 1 FROM run_input i WHERE i.run_id = r.id AND i.status = 'PENDING') AS inputs,
         r.cost::text AS cost, r.max_cost::text AS max_cost, r.confirm_cost_above::text AS confirm_cost_above,
         (SELECT coalesce(a.decision::text, 'OPEN') FROM tool_approval a WHERE a.run_id = r.id AND a.kind = 'COST_CONFIRMATION'
           ORDER BY a.requested_at DESC LIMIT 1) AS confirmation,
         coalesce(p.daily_cost_limit, ${limit}::numeric)::text AS daily_limit,
         (SELECT d.cost FROM principal_daily_cost d WHERE d.principal_id = r.owner_id AND d.day = (now() AT TIME ZONE 'UTC')::date)::text AS daily_spent,
         w.monthly_budget::text AS monthly_budget,
         CASE WHEN w.monthly_budget IS NOT NULL THEN
           (SELECT coalesce(sum(m.cost), 0) FROM run m WHERE m.workspace_id = w.id
              AND m.created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')::text END AS monthly_spent
    FROM run r JOIN principal p ON p.id = r.owner_id LEFT JOIN workspace w ON w.id = r.workspace_id
   WHERE r.id = ${run}::text`;

const CONFIRMATIONS: Record<NonNullable<Row["confirmation"]>, Confirmation> = { OPEN: "WAITING", APPROVE: "APPROVED", EDIT: "APPROVED", REJECT: "REJECTED" };

/** Reads what was asked of the run and its cost caps; `dailyCostLimit` is the operator default (DAILY_COST_LIMIT). */
export async function readRunRequests(prisma: PrismaClient, runId: string, dailyCostLimit: string | null): Promise<RunRequests> {
  const [row] = await queryRows<Row>(prisma, sqlOf("$1", "$2"), runId, dailyCostLimit);
  return requestsOf(row);
}

/**
 * The same read as a column of another statement (transaction.ts, CarriedRead): `value` is what
 * it read once that statement was answered, undefined while it was not (the caller reads alone).
 * The read sees the database as it was when the statement began, as a read sent beside it would.
 */
export function carriedRunRequests(runId: string, dailyCostLimit: string | null): { read: CarriedRead; value: () => RunRequests | undefined } {
  let value: RunRequests | undefined;
  return {
    read: {
      sql: (first) => ({ expr: `(SELECT row_to_json(q) FROM (${sqlOf(`$${first}`, `$${first + 1}`)}) q)`, params: [runId, dailyCostLimit] }),
      settle: (row) => {
        value = requestsOf((row ?? undefined) as Row | undefined);
      },
    },
    value: () => value,
  };
}

/**
 * The same read as a column of a statement over many runs (a claim's first attempts,
 * first-attempt-statement.ts): `run` and `limit` are SQL expressions of the run's id and the
 * operator default daily limit; the column's value is read back with `requestsOfColumn`.
 */
export const runRequestsColumn = (run: string, limit: string): string => `(SELECT row_to_json(q) FROM (${sqlOf(run, limit)}) q)`;

/** What `runRequestsColumn` read; undefined when the run was not found (the attempt then reads alone). */
export const requestsOfColumn = (value: unknown): RunRequests | undefined => (value ? requestsOf(value as Row) : undefined);

function requestsOf(row: Row | undefined): RunRequests {
  const dailyLimit = decimalOrNull(row?.daily_limit);
  const monthlyBudget = decimalOrNull(row?.monthly_budget);
  const costs: CostState = {
    spent: decimalOrNull(row?.cost) ?? decimalOrNull("0")!,
    maxCost: decimalOrNull(row?.max_cost),
    confirmCostAbove: decimalOrNull(row?.confirm_cost_above),
    confirmation: row?.confirmation ? CONFIRMATIONS[row.confirmation] : "NONE",
    daily: dailyLimit ? { limit: dailyLimit, spent: decimalOrNull(row?.daily_spent ?? "0")! } : null,
    monthly: monthlyBudget ? { limit: monthlyBudget, spent: decimalOrNull(row?.monthly_spent ?? "0")! } : null,
  };
  return { stop: row?.stop_mode ?? null, pause: row?.pause ?? false, inputs: row?.inputs ?? false, costs };
}
