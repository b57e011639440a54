// What changed since the previous version of a publication (PublicationVersion.changesFromPrevious).
import {
  CHANGES_CONTEXT_LINES,
  CHANGES_DIFF_MAX,
  CHANGES_MAX_DIFF_LINES,
  type PublicationChanges,
  storedChanges,
} from "../../domain/research/publication-changes.js";
import { builder } from "../builder.js";
import { largeText } from "../large-text.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";

const PublicationChangesRef = builder.objectRef<PublicationChanges>("PublicationChanges").implement({
  description: "What changed from the previous version of the same publication to this one, computed once when this version was written.",
  fields: (t) => ({
    previousVersion: t.exposeInt("previousVersion", { description: "The number of the version this one is compared with (this version's number minus one)." }),
    addedLines: t.exposeInt("addedLines", {
      description: "Lines this version has that the previous one did not (the whole count, even when diff is truncated).",
    }),
    removedLines: t.exposeInt("removedLines", {
      description: "Lines of the previous version this one no longer has (the whole count, even when diff is truncated).",
    }),
    diff: t.exposeString("diff", {
      extensions: largeText(CHANGES_DIFF_MAX),
      description: `A unified diff from the previous version ("--- version n-1", "+++ version n") with ${CHANGES_CONTEXT_LINES} lines of context, at most ${groupedDigits(CHANGES_DIFF_MAX)} characters: a longer one is cut at a line end and diffTruncated is true. Two texts too far apart for a shortest diff (more line edits than a bounded search finds, or together longer than ${groupedDigits(CHANGES_MAX_DIFF_LINES)} lines) are shown as every old line removed and every new line added.`,
    }),
    diffTruncated: t.exposeBoolean("diffTruncated", {
      description: `True when the diff was longer than ${groupedDigits(CHANGES_DIFF_MAX)} characters and diff holds only its beginning (whole lines).`,
    }),
  }),
});

builder.prismaObjectFields("PublicationVersion", (t) => ({
  changesFromPrevious: t.field({
    type: PublicationChangesRef,
    nullable: true,
    description:
      "What changed since the previous version of the same publication; null for version 1 (and for versions stored before changes were kept). A schedule's runs publish each fire's answer as the next version, so this is what changed since the last fire.",
    select: { changesPreviousVersion: true, changesAddedLines: true, changesRemovedLines: true, changesDiff: true, changesDiffTruncated: true },
    resolve: (version) => storedChanges(version),
  }),
}));
