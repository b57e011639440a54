// What changed between two versions of one publication: a unified diff of their texts by lines
// (the `diff` package), the lines added and removed, computed once when a version is written and
// stored with it (publication_version.changes_*), so reading it costs nothing. The package is
// loaded when a second version is first written: a server that writes none does not hold it.

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
/**
 * The most work a diff may do, in lines × edits searched: the search's steps grow with both, so
 * long texts search fewer edits (two texts of 50,000 lines search 100) and the diff of any two
 * versions costs about the same bounded time, whatever their size.
 */
export const CHANGES_MAX_DIFF_WORK = 10_000_000;
/**
 * Two texts with more lines than this together are not diffed at all (splitting them into lines
 * alone would take the diff package longer than the bound): they are shown as every old line
 * removed and every new line added, like texts too far apart.
 */
export const CHANGES_MAX_DIFF_LINES = 100_000;

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
  const edits = editBound(previous.content, next.content);
  const patch =
    edits > 0
      ? structuredPatch(names[0], names[1], previous.content, next.content, undefined, undefined, {
          context: CHANGES_CONTEXT_LINES,
          maxEditLength: edits,
        })
      : undefined;
  if (!patch) return { previousVersion: previous.version, ...replacement(names, previous.content, next.content) };
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

/**
 * The most edits the diff of these two texts searches: CHANGES_MAX_DIFF_WORK spread over their
 * lines, or 0 (no diff search) above CHANGES_MAX_DIFF_LINES.
 */
export function editBound(before: string, after: string): number {
  const lines = lineCount(before) + lineCount(after);
  if (lines > CHANGES_MAX_DIFF_LINES) return 0;
  return Math.min(CHANGES_MAX_EDIT_LENGTH, Math.floor(CHANGES_MAX_DIFF_WORK / Math.max(1, lines)));
}

type Replacement = Omit<PublicationChanges, "previousVersion">;

/**
 * One hunk replacing every old line by every new one, written only up to CHANGES_DIFF_MAX: the
 * counts come from counting line ends, so a long text's lines are never all copied and prefixed.
 */
function replacement(names: readonly [string, string], before: string, after: string): Replacement {
  const removedLines = lineCount(before);
  const addedLines = lineCount(after);
  const start = (count: number) => (count ? `1,${count}` : "0,0");
  let text = `--- ${names[0]}\n+++ ${names[1]}\n@@ -${start(removedLines)} +${start(addedLines)} @@\n`;
  const lines = (function* () {
    yield* linesOf(before, "-");
    yield* linesOf(after, "+");
  })();
  for (const line of lines) {
    if (text.length > CHANGES_DIFF_MAX) break;
    text += `${line}\n`;
  }
  const cut = bounded(text);
  return { addedLines, removedLines, diff: cut.text, diffTruncated: cut.truncated };
}

/** The lines of a text, as a diff shows them, one at a time. */
function* linesOf(text: string, prefix: "-" | "+"): Generator<string> {
  let from = 0;
  while (from < text.length) {
    const end = text.indexOf("\n", from);
    if (end < 0) {
      yield prefix + text.slice(from);
      yield "\\ No newline at end of file";
      return;
    }
    yield prefix + text.slice(from, end);
    from = end + 1;
  }
}

/** How many lines a text has (a last line without a line end counts). */
function lineCount(text: string): number {
  let count = 0;
  for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) count += 1;
  return text === "" || text.endsWith("\n") ? count : count + 1;
}
