// The transcript of folded log entries the summariser reads (R6): one entry per `[seq] role: …`
// header line, each cut to TRANSCRIPT_ENTRY_MAX_CHARS (at a character, never inside a surrogate
// pair: the request stays text a strict chat server accepts). Every further line of an entry is
// indented, so no entry's text — a tool result, a page fetched, a model's reply — starts a line that
// reads as another entry's header (a result holding "\n[12] user: …" stays inside that result).
import { resultEvidenceId } from "../../domain/research/evidence.js";
import { toolCallsOf } from "../../domain/json-columns.js";
import type { ViewEntry } from "./micro-compaction.js";
import type { SummarySections } from "./summary.js";

/** Each transcript entry is cut to this many characters for the summariser (the original stays in the log). */
export const TRANSCRIPT_ENTRY_MAX_CHARS = 2_000;
/** Characters per token assumed when sizing transcript chunks: lower than the estimator's 4, to be safe. */
const CHUNK_CHARS_PER_TOKEN = 3;
/** What each line of an entry after its first starts with. */
export const CONTINUATION_INDENT = "  ";

/** `text` cut to TRANSCRIPT_ENTRY_MAX_CHARS, at a code point, saying how much more there was. */
function cut(text: string, evidenceId: string | null): string {
  if (text.length <= TRANSCRIPT_ENTRY_MAX_CHARS) return text;
  const high = text.charCodeAt(TRANSCRIPT_ENTRY_MAX_CHARS - 1);
  const end = high >= 0xd800 && high <= 0xdbff ? TRANSCRIPT_ENTRY_MAX_CHARS - 1 : TRANSCRIPT_ENTRY_MAX_CHARS;
  const more = `… [${text.length - end} more characters${evidenceId ? `, evidence ${evidenceId}` : ""}]`;
  return text.slice(0, end) + more;
}

/** An entry's lines after its first, indented: none of them can read as an entry's header. */
const indented = (entry: string): string => entry.replace(/\r\n|\r|\n|\u2028|\u2029|\u0085/g, `\n${CONTINUATION_INDENT}`);

/** One folded entry as the summariser reads it: its compacted view, each tool result with its evidence id. */
function transcriptLine(entry: ViewEntry): string {
  const { message } = entry;
  const chat = entry.chat[0];
  const content = chat?.content ?? "";
  switch (message.role) {
    case "USER":
      return indented(`[${message.seq}] user: ${cut(content, null)}`);
    case "ASSISTANT": {
      const calls = (chat?.role === "assistant" ? chat.toolCalls : undefined) ?? toolCallsOf(message.toolCalls) ?? [];
      const callText = calls.map((call) => `${call.name}(${cut(call.arguments, null)})`).join("; ");
      return indented(`[${message.seq}] assistant: ${cut(content, null)}${callText ? `\ncalls: ${callText}` : ""}`);
    }
    case "TOOL":
      return indented(
        `[${message.seq}] result of ${message.toolName ?? "tool"} (evidence ${resultEvidenceId(message.id)}): ${cut(content, resultEvidenceId(message.id))}`,
      );
    default:
      return indented(`[${message.seq}] ${message.role.toLowerCase()}: ${cut(content, null)}`);
  }
}

/** The folded entries' transcript in chunks that each fit one summarisation request. */
export function transcriptChunks(entries: readonly ViewEntry[], sections: SummarySections, window: number): string[] {
  const previousChars = JSON.stringify(sections).length;
  const budgetChars = Math.max(4_000, (window - 1_000) * CHUNK_CHARS_PER_TOKEN - previousChars);
  const chunks: string[] = [];
  let current = "";
  for (const entry of entries) {
    const line = transcriptLine(entry);
    if (current && current.length + line.length + 1 > budgetChars) {
      chunks.push(current);
      current = "";
    }
    current = current ? `${current}\n${line}` : line;
  }
  if (current) chunks.push(current);
  return chunks;
}
