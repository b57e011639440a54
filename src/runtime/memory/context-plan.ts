// The pure part of building a model request from the log (R4, R5, R6, R8): the latest summary plus
// the raw messages after it, micro-compacted as the budget requires, and — when the request is still
// over the trigger — a proposal of which oldest turns to fold into the next summary. No model call
// and no I/O here, so it is cheap enough to run before every model request (see bench/memory.ts).
import { type RecordedMessage, recordRequest } from "../../domain/trace/recorded-request.js";
import type { LoggedMessage } from "../ports/conversation-log.js";
import type { ChatMessage, ToolSchema } from "../ports/model.js";
import { type BudgetBreakdown, computeBudget, DEFAULT_RESERVED_OUTPUT, DEFAULT_SAFETY_BUFFER, DEFAULT_TRIGGER_RATIO } from "./budget.js";
import { MemoCache, spilled } from "./memo-cache.js";
import { withRepairs } from "./repair.js";
import { type InputKind, inTurns } from "./request-turns.js";
import {
  applyCandidate,
  type CompactionPolicies,
  cutReply,
  DEFAULT_COMPACTION_POLICIES,
  DEFAULT_MIN_COMPACT_CHARS,
  findCandidates,
  type ViewEntry,
} from "./micro-compaction.js";
import { renderSummary, type SectionKey, type StoredSummary } from "./summary.js";
import { toolCallsOf } from "../../domain/json-columns.js";

export { MemoCache };

/** After a fold, the request should come back under this share of the trigger, so folding is not needed again next turn. */
const FOLD_TARGET_RATIO = 0.6;

export type ContextInput = {
  systemPrompt: string;
  /** The conversation's whole log, in order. */
  log: readonly LoggedMessage[];
  tools: readonly ToolSchema[];
  contextWindow: number;
  /**
   * The run the request is for: its first user message and the context it was given are the
   * current input, never folded. Default: the log's last user message and its run's context.
   */
  runId?: string;
  policies?: CompactionPolicies;
  minCompactChars?: number;
  reservedOutput?: number;
  safetyBuffer?: number;
  triggerRatio?: number;
  /** Per-message memo across builds (log entries never change); see MemoCache. */
  cache?: MemoCache;
  /** Use this summary instead of the log's latest (a fallback fold that is not persisted). */
  summaryOverride?: StoredSummary;
};

export type BuiltContext = {
  messages: ChatMessage[];
  budget: BudgetBreakdown;
  /** Ids of the log messages whose content the request carries unchanged. */
  carried: ReadonlySet<string>;
  /** `messages` as the model-call span records them: log entries shown as they are become references (trace/record/recorded-request.ts). */
  recorded: RecordedMessage[];
};

export type CompactionStats = {
  /** Evidence ids whose originals this request shows only as a pointer. */
  evidenceCleared: string[];
  /** The request's estimate with the whole log raw and nothing compacted. */
  tokensBefore: number;
  tokensAfter: number;
  /** Summary sections cut for space, lowest priority first. */
  sectionsTrimmed: SectionKey[];
  /** Model steps folded into the summary in use (over all summaries); 0 without one. */
  turnsFolded: number;
  /** The last seq the summary in use covers; 0 without one. */
  coversThroughSeq: number;
};

/** The oldest raw turns to fold into the next summary, as seen after micro-compaction. */
export type FoldProposal = { entries: ViewEntry[]; fromSeq: number; throughSeq: number; turns: number };

export type ContextPlan = BuiltContext & {
  stats: CompactionStats;
  fold: FoldProposal | null;
  /** The summary in use (the log's latest or the override), if any. */
  summary: StoredSummary | null;
  firstUserMessage: string;
  /** Tokens the summary message may take; also the output bound of the summarisation call. */
  summaryAllowance: number;
};

/**
 * The log with each turn's results in the order of the calls that asked for them. Results are
 * logged as they finish (tools/execute-tool-calls.ts), so the log holds them in the order they
 * arrived; the model is shown them in call order, so a request does not depend on which tool was
 * faster. Only entries between one assistant message and the next other entry move.
 */
export function inCallOrder<M extends Pick<LoggedMessage, "role" | "toolCalls" | "toolCallId">>(log: readonly M[]): M[] {
  const ordered: M[] = [];
  for (let i = 0; i < log.length; ) {
    const message = log[i]!;
    ordered.push(message);
    i += 1;
    const calls = message.role === "ASSISTANT" ? (toolCallsOf(message.toolCalls) ?? []) : [];
    if (calls.length < 2) continue;
    let end = i;
    while (end < log.length && (log[end]!.role === "TOOL" || log[end]!.role === "REPAIR")) end += 1;
    const positions = new Map(calls.map((call, at) => [call.id, at] as const));
    const position = (entry: M) => positions.get(entry.toolCallId ?? "") ?? calls.length;
    ordered.push(...log.slice(i, end).sort((a, b) => position(a) - position(b)));
    i = end;
  }
  return ordered;
}

const sum = (entries: readonly ViewEntry[]): number => entries.reduce((total, entry) => total + entry.tokens, 0);

/** What the log says before anything is compacted: the summary in use, the current input, the raw rest. */
type LogScan = {
  summary: StoredSummary | null;
  firstUserMessage: string;
  lastModelStepSeq: number;
  /** The last seq the summary covers; 0 without one. */
  covered: number;
  /** Every entry but summaries, as the log shows it. */
  all: ViewEntry[];
  /** The current input: the run's question, then the context the run was given (if any), in log order. */
  current: ViewEntry[];
  /** The entries after the summary, the current input left out. */
  raw: ViewEntry[];
};

function scanLog(input: ContextInput, cache: MemoCache): LogScan {
  const log = inCallOrder(input.log);
  let summary = input.summaryOverride ?? null;
  let firstUser: LoggedMessage | undefined;
  let currentInput: LoggedMessage | undefined;
  let lastModelStepSeq = 0;
  for (const message of log) {
    if (message.role === "USER") {
      firstUser ??= message;
      if (input.runId === undefined ? true : message.runId === input.runId && !currentInput) currentInput = message;
    } else if (message.role === "ASSISTANT") lastModelStepSeq = message.seq;
    else if (message.role === "SUMMARY" && !input.summaryOverride) summary = cache.summary(message) ?? summary;
  }
  const covered = summary?.coversThroughSeq ?? 0;
  const all = log.filter((message) => message.role !== "SUMMARY").map((message) => cache.view(message));
  // The run's context belongs to its input: a fold never takes it, so the run keeps its listing.
  const isCurrent = (message: LoggedMessage) =>
    message === currentInput ||
    (message.role === "CONTEXT" && currentInput !== undefined && message.runId === currentInput.runId && message.seq > currentInput.seq);
  const current = all.filter((entry) => isCurrent(entry.message));
  const raw = all.filter((entry) => entry.message.seq > covered && !isCurrent(entry.message));
  return { summary, firstUserMessage: firstUser?.content ?? "", lastModelStepSeq, covered, all, current, raw };
}

/**
 * The messages that render a run's question, its context or a steering input (a USER entry of a
 * run after its question), for the request's role order (request-turns.ts).
 */
function inputKinds(all: readonly ViewEntry[]): Map<ChatMessage, InputKind> {
  const asked = new Set<string | null>();
  const kind = ({ role, runId }: LoggedMessage): InputKind | null => {
    if (role === "CONTEXT") return "context";
    if (role !== "USER") return null;
    if (runId !== null && asked.has(runId)) return "steer";
    asked.add(runId);
    return "question";
  };
  return new Map(
    all.flatMap((entry) => {
      const found = kind(entry.message);
      return found ? entry.chat.map((chat) => [chat, found] as const) : [];
    }),
  );
}

/** The request's budget (R8) for the given history and summary; the one place its tokens are counted. */
function budgetOf(
  input: ContextInput,
  cache: MemoCache,
  parts: { currentInput: readonly ChatMessage[]; history: readonly ChatMessage[]; summary?: ChatMessage | null },
) {
  return computeBudget({
    contextWindow: input.contextWindow,
    reservedOutput: input.reservedOutput ?? DEFAULT_RESERVED_OUTPUT,
    safetyBuffer: input.safetyBuffer ?? DEFAULT_SAFETY_BUFFER,
    triggerRatio: input.triggerRatio ?? DEFAULT_TRIGGER_RATIO,
    systemPrompt: input.systemPrompt,
    tools: input.tools,
    ...parts,
    estimator: cache.memoEstimator,
  });
}

/**
 * R5: "always" candidates first, then "stale" ones oldest first while over the trigger; returns the
 * estimate after. The latest model step is never folded: when it (with its results and `unfoldable`,
 * what a fold leaves besides) cannot fit the window, its reply text is cut for the model.
 */
function microCompact(
  input: ContextInput,
  scan: LogScan,
  tokens: { start: number; trigger: number; window: number; unfoldable: number },
  estimate: (message: ChatMessage) => number,
): number {
  const { start, trigger } = tokens;
  const candidates = findCandidates(scan.raw, {
    lastModelStepSeq: scan.lastModelStepSeq,
    policies: input.policies ?? DEFAULT_COMPACTION_POLICIES,
    minChars: input.minCompactChars ?? DEFAULT_MIN_COMPACT_CHARS,
  });
  let total = start;
  for (const candidate of candidates) if (candidate.policy === "always") total -= applyCandidate(candidate, estimate);
  for (const candidate of candidates) {
    if (total <= trigger) break;
    if (candidate.policy === "stale") total -= applyCandidate(candidate, estimate);
  }
  const latest = scan.raw.findLastIndex((entry) => entry.message.role === "ASSISTANT");
  if (latest >= 0 && tokens.unfoldable + sum(scan.raw.slice(latest)) > tokens.window) total -= cutReply(scan.raw[latest]!, estimate);
  return total;
}

/**
 * The current input stays raw; when its turn was folded it follows the summary (R6). Every
 * interrupted call gets its neutral note right after the call (R7), so the request is valid.
 */
function conversationOf({ raw, current, covered }: LogScan): ChatMessage[] {
  const folded = current.length > 0 && current[0]!.message.seq <= covered;
  const entries = folded ? [...current, ...raw] : insertInOrder(raw, current);
  return withRepairs(entries.flatMap((entry) => entry.chat)).messages;
}

/** Which entries the request carries as logged, and its messages as the model-call span records them. */
function provenance(
  { raw, current }: LogScan,
  messages: ChatMessage[],
  joined: ReadonlyMap<ChatMessage, readonly ChatMessage[]>,
): Pick<BuiltContext, "carried" | "recorded"> {
  // Carried means the model saw the entry's own content: not cleared, and not shown as a spill preview.
  const asLogged = [...raw, ...current].filter((entry) => entry.cleared.length === 0 && !spilled(entry.message));
  // A request message (or a part of a joined one) that is still the very object its entry
  // rendered (not cleared, not rewritten for the model) reads as that entry: the span records a
  // reference to it.
  const sources = new Map<ChatMessage, string>(asLogged.flatMap((entry) => entry.chat.map((chat) => [chat, entry.message.id] as const)));
  return { carried: new Set(asLogged.map((entry) => entry.message.id)), recorded: recordRequest(messages, sources, joined) };
}

export function planContext(input: ContextInput): ContextPlan {
  const cache = input.cache ?? new MemoCache();
  const estimate = (message: ChatMessage) => cache.messageTokens(message);
  const scan = scanLog(input, cache);
  const { summary, covered, current, raw } = scan;
  const currentChat = current.flatMap((entry) => entry.chat);

  const { fixedOverhead, trigger, historyBudget, effectiveWindow } = budgetOf(input, cache, { currentInput: currentChat, history: [] });
  const tokensBefore = fixedOverhead + sum(scan.all) - sum(current);
  const summaryAllowance = Math.max(256, Math.min(4_000, Math.floor(historyBudget * 0.25)));
  const rendered = summary
    ? renderSummary({ sections: summary.sections, firstUserMessage: scan.firstUserMessage, coversThroughSeq: covered, maxTokens: summaryAllowance, estimate })
    : null;
  const summaryTokens = rendered ? estimate(rendered.message) : 0;
  const unfoldable = fixedOverhead + Math.max(summaryTokens, summaryAllowance);
  const total = microCompact(input, scan, { start: fixedOverhead + summaryTokens + sum(raw), trigger, window: effectiveWindow, unfoldable }, estimate);
  const fold = total > trigger ? proposeFold(raw, covered, Math.floor(trigger * FOLD_TARGET_RATIO) - fixedOverhead - summaryAllowance) : null;

  const conversation = conversationOf(scan);
  const inCurrent = new Set(currentChat);
  const history = conversation.filter((message) => !inCurrent.has(message));
  const system: ChatMessage = { role: "system", content: input.systemPrompt };
  const { messages, joined } = inTurns([system, ...(rendered ? [rendered.message] : []), ...conversation], inputKinds(scan.all));
  const budget = budgetOf(input, cache, { currentInput: currentChat, history, summary: rendered?.message ?? null });
  return {
    messages,
    budget,
    ...provenance(scan, messages, joined),
    fold,
    summary,
    firstUserMessage: scan.firstUserMessage,
    summaryAllowance,
    stats: {
      evidenceCleared: raw.flatMap((entry) => entry.cleared),
      tokensBefore,
      tokensAfter: budget.estimate,
      sectionsTrimmed: rendered?.trimmed ?? [],
      turnsFolded: summary?.turnsFolded ?? 0,
      coversThroughSeq: covered,
    },
  };
}

/** The raw entries with the current input's entries put back at their places in the log. */
function insertInOrder(raw: readonly ViewEntry[], current: readonly ViewEntry[]): ViewEntry[] {
  const ordered = [...raw];
  for (const entry of current) {
    const at = ordered.findIndex((other) => other.message.seq > entry.message.seq);
    ordered.splice(at < 0 ? ordered.length : at, 0, entry);
  }
  return ordered;
}

/**
 * The shortest prefix of `raw` to fold so that what stays fits `target` tokens (or the longest
 * foldable prefix when nothing fits). A prefix ends before a user or assistant message, never between
 * a tool call and its results, and the latest model step with its results always stays raw.
 */
function proposeFold(raw: readonly ViewEntry[], covered: number, target: number): FoldProposal | null {
  const lastStep = raw.findLastIndex((entry) => entry.message.role === "ASSISTANT");
  let remaining = sum(raw);
  let boundary = -1;
  for (let index = 1; index <= lastStep; index += 1) {
    remaining -= raw[index - 1]!.tokens;
    const role = raw[index]!.message.role;
    if (role !== "USER" && role !== "ASSISTANT") continue;
    boundary = index;
    if (remaining <= target) break;
  }
  if (boundary <= 0) return null;
  const entries = raw.slice(0, boundary);
  return {
    entries,
    fromSeq: covered + 1,
    throughSeq: raw[boundary]!.message.seq - 1,
    turns: entries.filter((entry) => entry.message.role === "ASSISTANT").length,
  };
}
