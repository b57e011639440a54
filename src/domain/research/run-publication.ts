// What a settled run published, or why it published nothing (run_publication). The publication
// rules are for text people write (something visible, at most PUBLICATION_CONTENT_MAX
// characters). A model's answer is output, not input: one that breaks them stays the run's
// answer — the run succeeds — and is only not published, with the reason on the run.
import type { Prisma, RunPublicationOutcome } from "../../generated/prisma/client.js";
import { hasVisibleCharacter } from "../validation.js";
import { PUBLICATION_CONTENT_MAX } from "./publication-service.js";
import { groupedDigits } from "../text/grouped-digits.js";

export type { RunPublicationOutcome };

export type Skipped = { outcome: Exclude<RunPublicationOutcome, "PUBLISHED">; reason: string };

/** Null when the answer is published; else the outcome the run records and why, in words. */
export function skippedBecause(run: { workspaceId: string | null }, succeeded: boolean, answer: string): Skipped | null {
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

/** Records, in the settle transaction, what the run published or why it published nothing. */
export function recordRunPublication(
  tx: Prisma.TransactionClient,
  runId: string,
  data: { outcome: RunPublicationOutcome; reason: string | null; publicationVersionId: string | null },
): Promise<unknown> {
  return tx.runPublication.upsert({ where: { runId }, create: { runId, ...data }, update: data });
}
