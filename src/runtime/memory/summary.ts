// R6: the structured summary that early history is folded into. Nine fixed sections with priorities
// anchor the user's goal and the progress made, however many turns are folded: the model writes
// them through a dedicated prompt, later summaries merge-update the earlier ones section by section,
// and when tokens are short sections are cut from P3 upwards — P0 never. The conversation's first
// user message is put into the primary-request section by this code, verbatim, never by the model.
import { z } from "zod";
import type { ChatMessage, ModelRequest } from "../ports/model.js";

export type Priority = "P0" | "P1" | "P2" | "P3";

export const SUMMARY_SECTIONS = [
  {
    key: "primaryRequest",
    title: "Primary request and intent",
    priority: "P0",
    guide: "what the user wants overall and why; refine, never drop, earlier intent",
  },
  { key: "currentState", title: "Current state and progress", priority: "P0", guide: "what has been done and found so far" },
  { key: "nextStep", title: "Next step", priority: "P0", guide: "the very next action planned" },
  { key: "keyFacts", title: "Key identifiers and facts (verbatim)", priority: "P1", guide: "ids, names, numbers, paths, URLs exactly as they appeared" },
  { key: "decisions", title: "Decisions and conclusions", priority: "P1", guide: "each with the evidence id (ev_…) it rests on" },
  { key: "pendingTasks", title: "Pending tasks", priority: "P1", guide: "open items still to do" },
  { key: "userConstraints", title: "User constraints and preferences", priority: "P1", guide: "requirements the user stated" },
  { key: "errorsAndFixes", title: "Errors and fixes", priority: "P2", guide: "what went wrong and how it was handled" },
  { key: "toolResultDigest", title: "Tool-result digest", priority: "P3", guide: "one line per notable tool result, with its evidence id" },
] as const satisfies readonly { key: string; title: string; priority: Priority; guide: string }[];

export type SectionKey = (typeof SUMMARY_SECTIONS)[number]["key"];
export type SummarySections = Record<SectionKey, string>;

/** A section's text is bounded so one runaway section cannot crowd out the rest. */
const SECTION_MAX_CHARS = 6_000;
const sectionText = z.string().max(SECTION_MAX_CHARS);

/** The model's answer: any subset of the sections (a merge-update may leave sections unchanged). */
const sectionsUpdateSchema = z
  .object(Object.fromEntries(SUMMARY_SECTIONS.map((s) => [s.key, sectionText.optional()])) as Record<SectionKey, z.ZodOptional<typeof sectionText>>)
  .refine((update) => Object.values(update).some((value) => value !== undefined), { message: "no known section in the answer" });

/** A SUMMARY log entry's content (JSON). */
export const storedSummarySchema = z.object({
  format: z.literal("dossier.summary.v1"),
  /** The folded messages: seq ≤ coversThroughSeq (this and every earlier summary together). */
  coversThroughSeq: z.number().int().min(1),
  /** The first seq this summary folded in (the earlier ones came through the previous summary). */
  foldedFromSeq: z.number().int().min(1),
  /** Model steps folded so far, over all summaries of the conversation. */
  turnsFolded: z.number().int().min(0),
  sections: z.object(Object.fromEntries(SUMMARY_SECTIONS.map((s) => [s.key, z.string()])) as Record<SectionKey, z.ZodString>),
});
export type StoredSummary = z.infer<typeof storedSummarySchema>;

export const emptySections = (): SummarySections => Object.fromEntries(SUMMARY_SECTIONS.map((s) => [s.key, ""])) as SummarySections;

/** Why a summary answer was not usable; the run goes on with micro-compaction only. */
export class MalformedSummaryError extends Error {
  override name = "MalformedSummaryError";
}

/** The first line of the summarisation system prompt: it marks the request (the scripted model looks for it). */
export const SUMMARY_PROMPT_MARKER = "You maintain the structured memory of a long-running research agent.";

const SUMMARY_SYSTEM_PROMPT = [
  SUMMARY_PROMPT_MARKER,
  "You receive the current summary (JSON, possibly empty) and a transcript of the conversation turns that are being folded into it.",
  "Each transcript entry starts at a line's start with its [number] and role; its further lines are indented and belong to it (a tool result quoting a user line is still the tool's result).",
  "Merge-update the summary: keep what is still true, add what the new turns changed, and leave a section out of your answer when the new turns do not change it.",
  "Answer with ONE JSON object and nothing else. Its keys are section names, its values plain text (short bullet lines are fine):",
  ...SUMMARY_SECTIONS.map((s) => `- "${s.key}" (${s.priority}, ${s.title}): ${s.guide}`),
  "Copy identifiers, numbers and evidence ids (ev_…) exactly. Never invent facts. Write the answer, not a plan.",
].join("\n");

/** The model request that folds `transcript` into `previous`: a dedicated prompt, no tools. */
export function summaryRequest(previous: SummarySections, transcript: string, maxOutputTokens: number): ModelRequest {
  return {
    messages: [
      { role: "system", content: SUMMARY_SYSTEM_PROMPT },
      {
        role: "user",
        content: `<current-summary>\n${JSON.stringify(previous, null, 1)}\n</current-summary>\n<turns-to-fold>\n${transcript}\n</turns-to-fold>`,
      },
    ],
    tools: [],
    maxOutputTokens,
  };
}

export function isSummaryRequest(request: Pick<ModelRequest, "messages">): boolean {
  const first = request.messages[0];
  return first?.role === "system" && first.content.startsWith(SUMMARY_PROMPT_MARKER);
}

/** The JSON object in a model's answer, tolerating a Markdown code fence around it. */
function extractJson(text: string): unknown {
  const trimmed = text.trim();
  const fenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(trimmed);
  const body = fenced ? fenced[1]! : trimmed;
  try {
    return JSON.parse(body);
  } catch {
    // Some models add a sentence around the object: take the outermost braces.
    const start = body.indexOf("{");
    const end = body.lastIndexOf("}");
    if (start < 0 || end <= start) throw new MalformedSummaryError("the answer holds no JSON object");
    try {
      return JSON.parse(body.slice(start, end + 1));
    } catch (error) {
      throw new MalformedSummaryError(`the answer is not valid JSON: ${(error as Error).message}`);
    }
  }
}

/**
 * The previous sections merge-updated with the model's answer: a section the answer leaves out (or
 * leaves blank while it had content) keeps its earlier text. Throws MalformedSummaryError.
 */
export function mergeSummaryAnswer(previous: SummarySections, answer: string | null): SummarySections {
  if (!answer) throw new MalformedSummaryError("the answer is empty");
  let json = extractJson(answer);
  // Some models nest the sections under a "sections" key, as the stored form does.
  if (json && typeof json === "object" && "sections" in json && typeof json.sections === "object") json = json.sections;
  const parsed = sectionsUpdateSchema.safeParse(json);
  if (!parsed.success) {
    throw new MalformedSummaryError(`the sections are malformed: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"} ${i.message}`).join("; ")}`);
  }
  const merged = { ...previous };
  for (const { key } of SUMMARY_SECTIONS) {
    const value = parsed.data[key]?.trim();
    if (value) merged[key] = value;
  }
  return merged;
}

export type RenderedSummary = { message: ChatMessage; trimmed: SectionKey[] };

/**
 * The summary as the one `<system-reminder>` message injected before the recent raw messages. When
 * it exceeds `maxTokens`, whole sections are cut, lowest priority first (P3, then P2, then P1; the
 * later section first within a priority); P0 sections are never cut, so the message may stay over
 * `maxTokens` when they alone do not fit.
 */
export function renderSummary(input: {
  sections: SummarySections;
  firstUserMessage: string;
  coversThroughSeq: number;
  maxTokens: number;
  estimate: (message: ChatMessage) => number;
}): RenderedSummary {
  const trimmed: SectionKey[] = [];
  const cuttable = SUMMARY_SECTIONS.filter((s) => s.priority !== "P0")
    .map((s, order) => ({ ...s, order }))
    .sort((a, b) => b.priority.localeCompare(a.priority) || b.order - a.order);
  let message = summaryMessage(input, new Set());
  for (const section of cuttable) {
    if (input.estimate(message) <= input.maxTokens) break;
    trimmed.push(section.key);
    message = summaryMessage(input, new Set(trimmed));
  }
  return { message, trimmed };
}

function summaryMessage(input: { sections: SummarySections; firstUserMessage: string; coversThroughSeq: number }, cut: ReadonlySet<SectionKey>): ChatMessage {
  const parts = [
    "<system-reminder>",
    `Summary of the earlier conversation (log messages 1–${input.coversThroughSeq}, folded). ` +
      "The original messages are kept; an evidence id (ev_…) can be read back with the read_evidence tool.",
  ];
  for (const section of SUMMARY_SECTIONS) {
    if (cut.has(section.key)) continue;
    const text = input.sections[section.key].trim();
    if (section.key === "primaryRequest") {
      parts.push(`## ${section.title} [${section.priority}]`, `First user message (verbatim):\n${input.firstUserMessage}`);
      if (text) parts.push(text);
    } else if (text) {
      parts.push(`## ${section.title} [${section.priority}]`, text);
    }
  }
  if (cut.size > 0) parts.push(`(Sections left out for space: ${[...cut].join(", ")}.)`);
  parts.push("</system-reminder>");
  return { role: "user", content: parts.join("\n") };
}
