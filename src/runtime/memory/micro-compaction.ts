// R5: micro-compaction — pure computation at context-build time, no model call. A large tool-call
// argument text of a model step whose calls all have results, and a large tool result of a completed
// turn (such a step followed by a later model step), is replaced in the model's view by a short fact
// and an evidence id that resolves to the persisted original. Nothing in the log changes (R3, R4).
// The latest step's arguments count too: a reply whose arguments alone exceed the window must not
// make every later request overflow; its results stay, since the model has not read them yet.
import { argumentsEvidenceId, replyTextEvidenceId, resultEvidenceId } from "../../domain/research/evidence.js";
import type { LoggedMessage } from "../ports/conversation-log.js";
import type { ChatMessage } from "../ports/model.js";
import { toolCallsOf } from "../../domain/json-columns.js";

/** never: critical operations stay verbatim; stale: cleared oldest first while the request is over budget; always: cleared once the turn is complete. */
export type CompactionPolicy = "never" | "stale" | "always";
/** Per tool name; "*" is the policy of every tool not named. */
export type CompactionPolicies = Readonly<Record<string, CompactionPolicy>>;

/** read_evidence brings an original back for one look; once its turn is complete it is cleared again. */
export const DEFAULT_COMPACTION_POLICIES: CompactionPolicies = { "*": "stale", read_evidence: "always" };
/** Below this many characters a result or argument text is left alone: its replacement would save little. */
export const DEFAULT_MIN_COMPACT_CHARS = 1_024;

export function policyFor(policies: CompactionPolicies, toolName: string): CompactionPolicy {
  return policies[toolName] ?? policies["*"] ?? DEFAULT_COMPACTION_POLICIES["*"]!;
}

/** One log entry as the request will show it. `chat` is replaced when the entry is compacted. */
export type ViewEntry = {
  message: LoggedMessage;
  chat: ChatMessage[];
  tokens: number;
  /** Evidence ids cleared from this entry; empty means the entry is carried unchanged. */
  cleared: string[];
};

/** Something micro-compaction may clear: a result (callIndex null) or one call's arguments. */
export type Candidate = { entry: ViewEntry; callIndex: number | null; toolName: string; policy: CompactionPolicy; evidenceId: string };

/**
 * The candidates among `view`, oldest first: the arguments of every model step whose calls all have
 * results, and the results of the completed turns. `lastModelStepSeq` is the seq of the log's latest
 * assistant message: only turns before it are complete, and its results are never candidates. A
 * turn's results are the tool (and repair) entries between its assistant message and the next user
 * or assistant message.
 */
export function findCandidates(view: readonly ViewEntry[], options: { lastModelStepSeq: number; policies: CompactionPolicies; minChars: number }): Candidate[] {
  const candidates: Candidate[] = [];
  for (let index = 0; index < view.length; index += 1) {
    const entry = view[index]!;
    if (entry.message.role !== "ASSISTANT") continue;
    const calls = toolCallsOf(entry.message.toolCalls) ?? [];
    if (calls.length === 0) continue;
    const results: ViewEntry[] = [];
    let next = index + 1;
    for (; next < view.length && (view[next]!.message.role === "TOOL" || view[next]!.message.role === "REPAIR"); next += 1) {
      results.push(view[next]!);
    }
    const answered = new Set(results.map((result) => result.message.toolCallId));
    if (!calls.every((call) => answered.has(call.id))) continue;
    calls.forEach((call, callIndex) => {
      const policy = policyFor(options.policies, call.name);
      if (policy !== "never" && call.arguments.length >= options.minChars) {
        candidates.push({ entry, callIndex, toolName: call.name, policy, evidenceId: argumentsEvidenceId(entry.message.id, callIndex) });
      }
    });
    const complete = entry.message.seq < options.lastModelStepSeq;
    for (const result of complete ? results : []) {
      const toolName = result.message.toolName ?? "";
      const policy = policyFor(options.policies, toolName);
      if (result.message.role === "TOOL" && policy !== "never" && result.message.content.length >= options.minChars) {
        candidates.push({ entry: result, callIndex: null, toolName, policy, evidenceId: resultEvidenceId(result.message.id) });
      }
    }
    index = next - 1;
  }
  return candidates;
}

/** A one-line hint of what the cleared text began with, so the model knows what it was. */
function opening(text: string, max = 100): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max)}…`;
}

export function clearedResultText(toolName: string, original: string, evidenceId: string): string {
  return (
    `[earlier result of ${toolName} cleared — evidence ${evidenceId}; ${original.length} characters, ` +
    `read_evidence returns them. It began: ${opening(original)}]`
  );
}

/** Arguments stay a JSON object, since servers may parse them. */
export function clearedArgumentsText(toolName: string, original: string, evidenceId: string): string {
  return JSON.stringify({ cleared: `[earlier arguments of ${toolName} cleared — evidence ${evidenceId}; ${original.length} characters]` });
}

/**
 * Applies one candidate to its entry's view and returns the tokens saved. The entry's chat message
 * is replaced by a copy; the log entry is untouched.
 */
export function applyCandidate(candidate: Candidate, estimate: (message: ChatMessage) => number): number {
  const { entry } = candidate;
  const before = entry.tokens;
  const message = entry.chat[0];
  if (!message) return 0;
  if (candidate.callIndex === null) {
    if (message.role !== "tool") return 0;
    entry.chat = [{ ...message, content: clearedResultText(candidate.toolName, entry.message.content, candidate.evidenceId) }];
  } else {
    if (message.role !== "assistant" || !message.toolCalls) return 0;
    const index = candidate.callIndex;
    const toolCalls = message.toolCalls.map((call, i) =>
      i === index ? { ...call, arguments: clearedArgumentsText(call.name, call.arguments, candidate.evidenceId) } : call,
    );
    entry.chat = [{ ...message, toolCalls }];
  }
  entry.cleared.push(candidate.evidenceId);
  entry.tokens = entry.chat.reduce((sum, chat) => sum + estimate(chat), 0);
  return before - entry.tokens;
}

/** What a cut reply text keeps of its opening, in characters. */
export const CUT_REPLY_KEPT_CHARS = 2_048;

export function cutReplyText(original: string, evidenceId: string): string {
  // A surrogate pair is never split: the kept part ends before a lone high surrogate.
  const end = /[\uD800-\uDBFF]/.test(original.charAt(CUT_REPLY_KEPT_CHARS - 1)) ? CUT_REPLY_KEPT_CHARS - 1 : CUT_REPLY_KEPT_CHARS;
  return (
    `${original.slice(0, end)}\n[the rest of this reply was cut for length — evidence ${evidenceId}; ${original.length} characters ` +
    `in all, read_evidence returns them]`
  );
}

/**
 * Cuts the text of a model step's reply in the request's view to its opening and a pointer to the
 * logged original (a step that can be neither folded nor cleared otherwise: the latest one, when
 * its text alone does not fit); returns the tokens saved. The log entry is untouched.
 */
export function cutReply(entry: ViewEntry, estimate: (message: ChatMessage) => number): number {
  const message = entry.chat[0];
  if (entry.message.role !== "ASSISTANT" || message?.role !== "assistant" || (message.content?.length ?? 0) <= CUT_REPLY_KEPT_CHARS) return 0;
  const before = entry.tokens;
  const evidenceId = replyTextEvidenceId(entry.message.id);
  entry.chat = [{ ...message, content: cutReplyText(entry.message.content, evidenceId) }, ...entry.chat.slice(1)];
  entry.cleared.push(evidenceId);
  entry.tokens = entry.chat.reduce((sum, chat) => sum + estimate(chat), 0);
  return before - entry.tokens;
}
