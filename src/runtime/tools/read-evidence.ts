// R5: the built-in `read_evidence` tool. Micro-compaction replaces old tool results and arguments in
// the model's view by an evidence id; this tool brings the persisted original back, page by page, so
// the model can look again instead of guessing. Only evidence of the run's own conversation is read.
import type { ConversationService } from "../../domain/research/conversation-service.js";
import { type Tool, ToolError } from "../ports/tool.js";

export const READ_EVIDENCE_DEFAULT_CHARS = 8_000;
export const READ_EVIDENCE_MAX_CHARS = 16_000;

function parseArgs(args: unknown): { id: string; offset: number; maxChars: number } {
  const a = (args ?? {}) as Partial<{ id: unknown; offset: unknown; maxChars: unknown }>;
  if (typeof a.id !== "string" || a.id.trim() === "") throw new ToolError('Give the evidence id, e.g. {"id":"ev_…"}.');
  const offset = a.offset === undefined ? 0 : a.offset;
  const maxChars = a.maxChars === undefined ? READ_EVIDENCE_DEFAULT_CHARS : a.maxChars;
  if (!Number.isInteger(offset) || (offset as number) < 0) throw new ToolError("offset must be a whole number ≥ 0 (characters).");
  if (!Number.isInteger(maxChars) || (maxChars as number) < 1 || (maxChars as number) > READ_EVIDENCE_MAX_CHARS) {
    throw new ToolError(`maxChars must be a whole number from 1 to ${READ_EVIDENCE_MAX_CHARS}.`);
  }
  return { id: a.id.trim(), offset: offset as number, maxChars: maxChars as number };
}

export function createReadEvidenceTool(conversations: Pick<ConversationService, "evidence">): Tool {
  return {
    schema: {
      name: "read_evidence",
      description:
        "Reads back the original of an earlier tool result, tool-call arguments or reply text that were cleared or cut from the conversation " +
        "(the note names an evidence id such as ev_…). Long originals are read in pages: pass offset (characters) and maxChars.",
      parameters: {
        type: "object",
        properties: {
          id: { type: "string", description: "The evidence id, e.g. ev_clx…" },
          offset: { type: "integer", minimum: 0, description: "First character to return (default 0)." },
          maxChars: {
            type: "integer",
            minimum: 1,
            maximum: READ_EVIDENCE_MAX_CHARS,
            description: `Characters to return (default ${READ_EVIDENCE_DEFAULT_CHARS}).`,
          },
        },
        required: ["id"],
      },
    },
    async execute(args, context) {
      const { id, offset, maxChars } = parseArgs(args);
      const evidence = await conversations.evidence(id, { conversationId: context.run.conversationId });
      if (!evidence) throw new ToolError(`There is no evidence ${id} in this conversation.`);
      const chars = Array.from(evidence.content);
      if (offset > chars.length) throw new ToolError(`offset ${offset} is past the end (${chars.length} characters).`);
      const end = Math.min(chars.length, offset + maxChars);
      const what = {
        TOOL_RESULT: `result of ${evidence.toolName}`,
        TOOL_CALL_ARGUMENTS: `arguments of ${evidence.toolName}`,
        REPLY_TEXT: "text of your reply",
      }[evidence.kind];
      const rest = end < chars.length ? `; call again with offset ${end} for the rest` : "";
      return `[evidence ${evidence.id}: ${what}, characters ${offset}–${end} of ${chars.length}${rest}]\n${chars.slice(offset, end).join("")}`;
    },
  };
}
