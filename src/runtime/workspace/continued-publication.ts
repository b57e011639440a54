// What a run admitted to continue a publication (a schedule's fire) is told of the version it
// follows: what it said and when, so the model can report what changed. Bounded like the rest
// of the workspace context: a long version is shown up to CONTINUED_VERSION_CONTEXT_MAX
// characters and the model is told how to read the rest.
import { encodeGlobalId } from "../../domain/global-id.js";
import type { MaterialRead } from "../../domain/research/publication-service.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";
import { head } from "../../domain/text/whole-characters.js";

/** The most characters of the previous version's text the context carries. */
export const CONTINUED_VERSION_CONTEXT_MAX = 8_000;

export function continuedVersionLines(read: MaterialRead | null): string[] {
  if (!read?.version) return [];
  const v = read.version;
  const ref = `"${v.publication.title}" publicationId=${encodeGlobalId("Publication", v.publicationId)} version ${v.version}`;
  const next = `Your answer will be published as version ${v.version + 1} of this publication: say what changed since version ${v.version}.`;
  if (read.status === "UNAVAILABLE") {
    return ["", `This run continues ${ref}, but that version is UNAVAILABLE: ${read.reason}. Do not rely on what it said.`, next];
  }
  const shown = head(v.content, CONTINUED_VERSION_CONTEXT_MAX);
  const cut =
    shown.length < v.content.length
      ? [`(the first ${groupedDigits(shown.length)} of ${groupedDigits(v.content.length)} characters; read the rest with read_material)`]
      : [];
  return [
    "",
    `This run continues ${ref}, as of ${v.asOf.toISOString()} (stored ${v.createdAt.toISOString()}). What that version said:`,
    "<previous-version>",
    shown,
    ...cut,
    "</previous-version>",
    next,
  ];
}
