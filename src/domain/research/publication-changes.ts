// What changed between two versions of one publication: a unified diff of their texts by lines
// (the `diff` package), the lines added and removed, computed once when a version is written and
// stored with it (publication_version.changes_*), so reading it costs nothing. The package is
// loaded when a second version is first written: a server that writes none does not hold it.
import type { StructuredPatch } from "diff";

/** The most characters of diff text a version keeps; a longer diff is cut at a line end before it. */
export const CHANGES_DIFF_MAX = 64 * 1024;
/** Lines of unchanged context around each change. */
export const CHANGES_CONTEXT_LINES = 3;
/**
 * The most line edits the diff searches for a shortest edit script; two texts further apart are
 * diffed as every old line removed and every new line added (still a correct diff, not a minimal
 * one), so writing a version never costs more than this bound.
 */
export const CHANGES_MAX_EDIT_LENGTH = 1_000;

export type PublicationChanges = {
  previousVersion: number;
  addedLines: number;
  removedLines: number;
  diff: string;
  /** The diff was longer than CHANGES_DIFF_MAX and was cut; the counts are always whole. */
  diffTruncated: boolean;
};

type Text = { version: number; content: string };

/** The changes from `previous` to `next`, as stored and served. */
export async function changesBetween(previous: Text, next: Text): Promise<PublicationChanges> {
  const { FILE_HEADERS_ONLY, formatPatch, structuredPatch } = await import("diff");
  const names = [`version ${previous.version}`, `version ${next.version}`] as const;
  const patch =
    structuredPatch(names[0], names[1], previous.content, next.content, undefined, undefined, {
      context: CHANGES_CONTEXT_LINES,
      maxEditLength: CHANGES_MAX_EDIT_LENGTH,
    }) ?? replacement(names, previous.content, next.content);
  let addedLines = 0;
  let removedLines = 0;
  for (const line of patch.hunks.flatMap((hunk) => hunk.lines)) {
    if (line.startsWith("+")) addedLines += 1;
    else if (line.startsWith("-")) removedLines += 1;
  }
  const { text, truncated } = bounded(formatPatch(patch, FILE_HEADERS_ONLY));
  return { previousVersion: previous.version, addedLines, removedLines, diff: text, diffTruncated: truncated };
}

/** The stored columns of a version's changes (all null for a version without a previous one). */
export function changesColumns(changes: PublicationChanges | null) {
  return {
    changesPreviousVersion: changes?.previousVersion ?? null,
    changesAddedLines: changes?.addedLines ?? null,
    changesRemovedLines: changes?.removedLines ?? null,
    changesDiff: changes?.diff ?? null,
    changesDiffTruncated: changes?.diffTruncated ?? null,
  };
}

/** The changes stored with a version, or null when none were (version 1, or written before they were kept). */
export function storedChanges(version: {
  changesPreviousVersion: number | null;
  changesAddedLines: number | null;
  changesRemovedLines: number | null;
  changesDiff: string | null;
  changesDiffTruncated: boolean | null;
}): PublicationChanges | null {
  if (version.changesPreviousVersion === null) return null;
  return {
    previousVersion: version.changesPreviousVersion,
    addedLines: version.changesAddedLines ?? 0,
    removedLines: version.changesRemovedLines ?? 0,
    diff: version.changesDiff ?? "",
    diffTruncated: version.changesDiffTruncated ?? false,
  };
}

/** The diff text cut at the last line end within CHANGES_DIFF_MAX characters. */
function bounded(text: string): { text: string; truncated: boolean } {
  if (text.length <= CHANGES_DIFF_MAX) return { text, truncated: false };
  const cut = text.lastIndexOf("\n", CHANGES_DIFF_MAX - 1);
  return { text: text.slice(0, cut > 0 ? cut + 1 : CHANGES_DIFF_MAX), truncated: true };
}

/** One hunk replacing every old line by every new one. */
function replacement(names: readonly [string, string], before: string, after: string): StructuredPatch {
  const old = linesOf(before, "-");
  const added = linesOf(after, "+");
  return {
    oldFileName: names[0],
    newFileName: names[1],
    oldHeader: undefined,
    newHeader: undefined,
    hunks: [{ oldStart: old.count ? 1 : 0, oldLines: old.count, newStart: added.count ? 1 : 0, newLines: added.count, lines: [...old.lines, ...added.lines] }],
  };
}

function linesOf(text: string, prefix: "-" | "+"): { count: number; lines: string[] } {
  if (text === "") return { count: 0, lines: [] };
  const lines = (text.endsWith("\n") ? text.slice(0, -1) : text).split("\n").map((line) => prefix + line);
  return { count: lines.length, lines: text.endsWith("\n") ? lines : [...lines, "\\ No newline at end of file"] };
}
