// What a statement touches, read from its plan as executed (EXPLAIN (ANALYZE, FORMAT JSON)): an
// exact count, the same on a loaded machine as on an idle one.

type PlanNode = {
  "Node Type"?: string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  Plans?: PlanNode[];
};

/** Runs `sql` under EXPLAIN ANALYZE (it executes: run it in a transaction rolled back after) and gives back its plan. */
export async function executedPlan(
  query: (sql: string, ...values: unknown[]) => Promise<Record<string, unknown>[]>,
  sql: string,
  ...values: unknown[]
): Promise<PlanNode> {
  const [row] = await query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, ...values);
  const value = Object.values(row ?? {})[0];
  const parsed = (typeof value === "string" ? JSON.parse(value) : value) as { Plan: PlanNode }[];
  return parsed[0]!.Plan;
}

/**
 * The rows the plan's scans of `table` read: those they gave and those their filters removed, over
 * all their loops, and the entries its bitmap index scans of the table's indexes (named `<table>_…`) gave.
 */
export function rowsScanned(plan: PlanNode, table: string): number {
  const own =
    plan["Relation Name"] === table || (plan["Node Type"] === "Bitmap Index Scan" && plan["Index Name"]?.startsWith(`${table}_`))
      ? ((plan["Actual Rows"] ?? 0) + (plan["Rows Removed by Filter"] ?? 0) + (plan["Rows Removed by Index Recheck"] ?? 0)) * (plan["Actual Loops"] ?? 1)
      : 0;
  return own + (plan.Plans ?? []).reduce((sum, child) => sum + rowsScanned(child, table), 0);
}
