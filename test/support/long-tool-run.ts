// A run of many turns with large tool results, and what it stores: the bytes of its log and of
// its trace, as PostgreSQL counts them. Shared by the storage test and `bench/storage.ts`.
import type { Database } from "../../src/db/open-database.js";
import type { ModelRequest } from "../../src/runtime/ports/model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";

/** The result of `fetch_report` page `page`: `chars` characters, different on every page. */
export const reportPage = (page: number, chars: number) => `report page ${page}: ${"r".repeat(chars)}`.slice(0, chars);

export const reportTool = (chars: number): Tool => ({
  schema: { name: "fetch_report", description: "returns one page of a report", parameters: { type: "object", properties: { page: { type: "number" } } } },
  execute: async (args) => reportPage(Number((args as { page: number }).page), chars),
});

/**
 * Calls `fetch_report` once per turn for `turns` turns (pages 0…turns-1), plus whatever `extra`
 * adds to a turn, then answers "done".
 */
export function reportReadingModel(turns: number, extra: (turn: number) => { name: string; arguments: unknown }[] = () => []): ScriptedModel {
  return new ScriptedModel({
    name: "reader",
    steps: (_request: ModelRequest, i: number) =>
      i < turns ? { toolCalls: [{ name: "fetch_report", arguments: { page: i } }, ...extra(i)] } : { content: "done" },
  });
}

export type StoredBytes = {
  /** Message contents and tool-call arguments of the run's log entries. */
  log: number;
  /** Span names and attributes, event payloads and previews of the run's trace. */
  trace: number;
};

/** What the run stores, in bytes as PostgreSQL counts them. */
export async function storedBytes(db: Database, runId: string): Promise<StoredBytes> {
  const [row] = await db.prisma.$queryRawUnsafe<{ log: bigint; trace: bigint }[]>(
    `SELECT
       (SELECT coalesce(sum(octet_length(content) + coalesce(octet_length(tool_calls::text), 0)), 0) FROM message WHERE run_id = $1) AS log,
       (SELECT coalesce(sum(octet_length(name) + octet_length(attributes::text)), 0) FROM span WHERE trace_id = $1)
       + (SELECT coalesce(sum(octet_length(e.payload) + octet_length(e.preview)), 0) FROM span_event e JOIN span s ON s.id = e.span_id WHERE s.trace_id = $1)
       + (SELECT coalesce(sum(octet_length(span_after::text)), 0) FROM trace_change WHERE trace_id = $1) AS trace`,
    runId,
  );
  return { log: Number(row!.log), trace: Number(row!.trace) };
}
