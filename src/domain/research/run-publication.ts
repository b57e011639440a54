// What a settled run published, or why it published nothing (run_publication). The publication
// rules are for text people write (something visible, at most PUBLICATION_CONTENT_MAX
// characters). A model's answer is output, not input: one that breaks them stays the run's
// answer — the run succeeds — and is only not published, with the reason on the run.
import type { Prisma, RunPublicationOutcome } from "../../generated/prisma/client.js";
import { hasVisibleCharacter } from "../validation.js";
import { PUBLICATION_CONTENT_MAX, PUBLICATION_SOURCES_MAX } from "./publication-service.js";
import { groupedDigits } from "../text/grouped-digits.js";

export type { RunPublicationOutcome };

export type Skipped = { outcome: Exclude<RunPublicationOutcome, "PUBLISHED">; reason: string };
/** What the answer alone decides, before the run's sources are read (the settle's one statement may record it). */
export type SkippedForAnswer = Skipped & { outcome: Exclude<Skipped["outcome"], "TOO_MANY_SOURCES"> };

/** Null when the answer is published; else the outcome the run records and why, in words. */
export function skippedBecause(run: { workspaceId: string | null }, succeeded: boolean, answer: string): SkippedForAnswer | null {
  if (!run.workspaceId) return { outcome: "NO_WORKSPACE", reason: "the run was admitted outside any workspace" };
  if (!succeeded) return { outcome: "NOT_SUCCEEDED", reason: "only a succeeded run's answer is published" };
  if (answer.trim() === "") return { outcome: "EMPTY_ANSWER", reason: "the answer is empty" };
  if (!hasVisibleCharacter(answer)) return { outcome: "NO_VISIBLE_CHARACTERS", reason: "the answer has no visible character" };
  let chars = 0;
  for (const _ of answer.trim()) if (++chars > PUBLICATION_CONTENT_MAX) break;
  if (chars > PUBLICATION_CONTENT_MAX) {
    return {
      outcome: "TOO_LONG",
      reason: `the answer is longer than the ${groupedDigits(PUBLICATION_CONTENT_MAX)} characters a publication may hold`,
    };
  }
  return null;
}

/**
 * Null when a publication may name every version the run consumed; else why the answer is not
 * published. The sources are never cut to the limit: a publication's eligibility follows its
 * sources (eligibility.ts), so one built on a version it does not name would stay eligible when
 * that version is revoked. The answer stays the run's answer, and the run still succeeds.
 */
export function tooManySources(consumed: number): Skipped | null {
  if (consumed <= PUBLICATION_SOURCES_MAX) return null;
  return {
    outcome: "TOO_MANY_SOURCES",
    reason:
      `the run consumed ${groupedDigits(consumed)} materials and a publication may name at most ${groupedDigits(PUBLICATION_SOURCES_MAX)} as its sources; ` +
      `publishing it without the other ${groupedDigits(consumed - PUBLICATION_SOURCES_MAX)} would hide what it was built on`,
  };
}

/** Records, in the settle transaction, what the run published or why it published nothing. */
export function recordRunPublication(
  tx: Prisma.TransactionClient,
  runId: string,
  data: { outcome: RunPublicationOutcome; reason: string | null; publicationVersionId: string | null },
): Promise<unknown> {
  return tx.runPublication.upsert({ where: { runId }, create: { runId, ...data }, update: data });
}
