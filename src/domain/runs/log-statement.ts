// Appending to a conversation's log as one statement: the conversation's counter hands out the
// next seq numbers and every entry is inserted, with the attempt fence's check (domain/runs/holder.ts)
// carried inside the statement. One statement is atomic on its own, so a tool's result reaches the
// log in one round trip instead of a transaction's five. When the check fails nothing is written
// and the result is null; the caller then writes through its fenced transaction, which refuses
// the attempt and says why. A write carried with the append (a model reply's span end:
// transaction.ts, Carried) goes in the same statement, behind the same check; a read carried with
// it (transaction.ts, CarriedRead) is a column of its answer.
import type { Message, MessageRole, Prisma } from "../../generated/prisma/client.js";
import { queryRows } from "../../db/direct-statements.js";
import { holdsRunSql } from "./holder.js";
import type { Carried, CarriedRead } from "../transaction.js";
import { newSpanId } from "../trace/span-ids.js";

/** An entry as stored: its text already encoded (stored-text.ts). */
export type StoredEntry = { role: MessageRole; content: string; toolCalls?: Prisma.InputJsonValue; toolCallId?: string; toolName?: string };

type Inserted = { id: string; seq: number; tool_calls: string | null };

/** What stands for the check without a holder: never read ($1 is null), it only types $2 and $3. */
const UNGUARDED = "SELECT $2::int AS attempt, $3::text AS worker";

/**
 * Appends `entries` in order to the conversation in one statement; returns the rows as stored.
 * Null: `holder` no longer holds its run (or the conversation is gone), and nothing was written
 * — but for `carry` when only the conversation was gone: it is settled whenever it was written.
 */
export async function appendMessagesStatement(
  db: Prisma.TransactionClient,
  append: { conversationId: string; runId: string; entries: readonly StoredEntry[] },
  holder?: { runId: string; attempt: number; workerId: string },
  carry?: Carried,
  read?: CarriedRead,
): Promise<Message[] | null> {
  const createdAt = new Date();
  const rows = append.entries.map((entry, index) => ({
    n: index + 1,
    id: newSpanId(),
    role: entry.role,
    content: entry.content,
    // Absent keys are NULL columns, as the ORM leaves them.
    ...(entry.toolCalls !== undefined ? { tool_calls: entry.toolCalls } : {}),
    ...(entry.toolCallId !== undefined ? { tool_call_id: entry.toolCallId, tool_name: entry.toolName } : {}),
  }));
  const held = "($1::text IS NULL OR EXISTS (SELECT 1 FROM holder))";
  const carried = carry?.sql(9, held);
  const readBy = read?.sql(9 + (carried?.params.length ?? 0));
  // One row whatever was written: the entries as stored, the carried write's result, the carried read.
  const oneRow = carried || readBy;
  const sql = `WITH holder AS (${holder ? holdsRunSql(1) : UNGUARDED}),${carried ? ` ${carried.ctes},` : ""}
     counted AS (
       UPDATE conversation SET message_count = message_count + $5::int
       WHERE id = $4 AND ${held}${carried ? ` AND ${carried.written}` : ""}
       RETURNING message_count - $5::int AS base
     ),
     input AS (SELECT * FROM jsonb_to_recordset($6::jsonb) AS r(n int, id text, role text, content text, tool_calls jsonb, tool_call_id text, tool_name text)),
     inserted AS (
       INSERT INTO message (id, conversation_id, seq, role, content, tool_calls, tool_call_id, tool_name, run_id, created_at)
       SELECT input.id, $4, counted.base + input.n, input.role::"MessageRole", input.content, input.tool_calls, input.tool_call_id, input.tool_name, $7, $8::timestamptz
       FROM input, counted
       RETURNING id, seq, tool_calls::text AS tool_calls
     )
     ${
       oneRow
         ? `SELECT (SELECT json_agg(json_build_object('id', id, 'seq', seq, 'tool_calls', tool_calls) ORDER BY seq) FROM inserted) AS inserted,
              ${carried ? carried.result : "NULL"} AS carried, ${readBy ? readBy.expr : "NULL"} AS read`
         : "SELECT id, seq, tool_calls FROM inserted ORDER BY seq"
     }`;
  const params = [
    holder?.runId ?? null,
    holder?.attempt ?? null,
    holder?.workerId ?? null,
    append.conversationId,
    rows.length,
    JSON.stringify(rows),
    append.runId,
    createdAt.toISOString(),
    ...(carried?.params ?? []),
    ...(readBy?.params ?? []),
  ];
  let inserted: Inserted[];
  if (oneRow) {
    const [result] = await queryRows<{ inserted: Inserted[] | null; carried: unknown; read: unknown }>(db, sql, ...params);
    // Committed (the statement is its own transaction): the carried write is done, whatever the append did.
    if (carry && result?.carried != null) carry.settle(result.carried);
    read?.settle(result?.read ?? null);
    inserted = result?.inserted ?? [];
  } else inserted = await queryRows<Inserted>(db, sql, ...params);
  if (inserted.length < rows.length) return null;
  return inserted.map((row, index) => {
    const entry = append.entries[index]!;
    return {
      id: row.id,
      conversationId: append.conversationId,
      seq: Number(row.seq),
      role: entry.role,
      content: entry.content,
      // As the database gives it back (jsonb orders keys), as a read of the log would.
      toolCalls: row.tool_calls === null ? null : (JSON.parse(row.tool_calls) as Prisma.JsonValue),
      toolCallId: entry.toolCallId ?? null,
      toolName: entry.toolName ?? null,
      runId: append.runId,
      createdAt,
    };
  });
}
