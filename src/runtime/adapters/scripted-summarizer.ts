// The scripted model's answer to a summarisation request (R6), so that tests and the offline demo
// exercise history folding without a model server. Deterministic and plainly labelled: it updates
// only the sections it can fill mechanically (state, identifiers, evidence) and leaves the others
// to the merge, which keeps them unchanged.
import type { ModelRequest } from "../ports/model.js";

const IDENTIFIER = /\b[A-Z]{2,}-[A-Z0-9-]*\d[A-Z0-9-]*\b/g;
const EVIDENCE = /\bev_[A-Za-z0-9-]+(?:_a\d+)?\b/g;

function between(text: string, open: string, close: string): string {
  const start = text.indexOf(open);
  const end = text.lastIndexOf(close);
  return start < 0 || end < start ? "" : text.slice(start + open.length, end);
}

function lines(text: string | undefined): string[] {
  return (text ?? "").split("\n").filter((line) => line.trim() !== "");
}

/** The JSON answer: a merge-update of the current summary found in the request. */
export function scriptedSummaryAnswer(request: ModelRequest): string {
  const prompt = request.messages.at(-1)?.content ?? "";
  let previous: Record<string, string> = {};
  try {
    previous = JSON.parse(between(prompt, "<current-summary>", "</current-summary>")) as Record<string, string>;
  } catch {
    previous = {};
  }
  const transcript = between(prompt, "<turns-to-fold>", "</turns-to-fold>");
  const seqs = [...transcript.matchAll(/^\[(\d+)\]/gm)].map((match) => Number(match[1]));
  const facts = [...new Set([...lines(previous.keyFacts), ...(transcript.match(IDENTIFIER) ?? []).map((id) => `- ${id}`)])].slice(-30);
  const evidence = [...new Set(transcript.match(EVIDENCE) ?? [])].slice(-20);
  const update: Record<string, string> = {
    currentState: `(scripted summary) Turns up to log message ${seqs.length ? Math.max(...seqs) : "?"} are folded.`,
  };
  if (facts.length) update.keyFacts = facts.join("\n");
  if (evidence.length) update.toolResultDigest = [...lines(previous.toolResultDigest), `- results: ${evidence.join(", ")}`].slice(-10).join("\n");
  return JSON.stringify(update);
}
