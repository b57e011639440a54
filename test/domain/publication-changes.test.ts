// The changes between two versions' texts as pure functions: counts, the unified diff, the bound
// on its size, and texts too far apart for a shortest diff.
import { applyPatch } from "diff";
import { describe, expect, it } from "vitest";
import { CHANGES_DIFF_MAX, CHANGES_MAX_EDIT_LENGTH, changesBetween, editBound } from "../../src/domain/research/publication-changes.js";

const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} ${i}`).join("\n");

describe("changes between two versions", () => {
  it("counts the lines added and removed and gives a diff that turns one into the other", async () => {
    const before = "a\nb\nc\nd\n";
    const after = "a\nB\nc\nd\ne\n";
    const changes = await changesBetween({ version: 3, content: before }, { version: 4, content: after });
    expect(changes).toMatchObject({ previousVersion: 3, addedLines: 2, removedLines: 1, diffTruncated: false });
    expect(changes.diff).toBe("--- version 3\n+++ version 4\n@@ -1,4 +1,5 @@\n a\n-b\n+B\n c\n d\n+e\n");
    expect(applyPatch(before, changes.diff)).toBe(after);
  });

  it("texts too far apart are diffed as every line removed and every line added, still a correct diff", async () => {
    const n = CHANGES_MAX_EDIT_LENGTH / 2 + 1; // 2n edits: over the bound
    const before = lines(n, "old");
    const after = lines(n, "new");
    const changes = await changesBetween({ version: 1, content: before }, { version: 2, content: after });
    expect([changes.addedLines, changes.removedLines, changes.diffTruncated]).toEqual([n, n, false]);
    expect(changes.diff.startsWith(`--- version 1\n+++ version 2\n@@ -1,${n} +1,${n} @@\n-old 0\n`)).toBe(true);
    expect(applyPatch(before, changes.diff)).toBe(after);
  });

  it("a diff over the bound is cut at a line end and says so; the counts stay whole", async () => {
    const changes = await changesBetween({ version: 1, content: lines(500, "old") }, { version: 2, content: lines(500, `new ${"x".repeat(200)}`) });
    expect([changes.addedLines, changes.removedLines, changes.diffTruncated]).toEqual([500, 500, true]);
    expect(changes.diff.length).toBeLessThanOrEqual(CHANGES_DIFF_MAX);
    expect(changes.diff.endsWith("\n")).toBe(true);
  });

  it("an empty text replaced by a long one is a correct diff from line 0", async () => {
    const after = `${lines(CHANGES_MAX_EDIT_LENGTH + 1, "new")}\n`;
    const changes = await changesBetween({ version: 1, content: "" }, { version: 2, content: after });
    expect([changes.addedLines, changes.removedLines]).toEqual([CHANGES_MAX_EDIT_LENGTH + 1, 0]);
    expect(changes.diff.startsWith(`--- version 1\n+++ version 2\n@@ -0,0 +1,${CHANGES_MAX_EDIT_LENGTH + 1} @@\n+new 0\n`)).toBe(true);
    expect(applyPatch("", changes.diff)).toBe(after);
  });

  it("two long texts far apart cost a bounded diff: the replacement, cut, within a second", async () => {
    // 660 KB each: 330,330 lines, then the same lines with 1,001 inserted among them.
    const before = "a\n".repeat(330_330);
    const after = `${"a\n".repeat(330)}b\n`.repeat(1_001);
    const started = performance.now();
    const changes = await changesBetween({ version: 1, content: before }, { version: 2, content: after });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect([changes.addedLines, changes.removedLines, changes.diffTruncated]).toEqual([331_331, 330_330, true]);
    expect(changes.diff.startsWith("--- version 1\n+++ version 2\n@@ -1,330330 +1,331331 @@\n-a\n-a\n")).toBe(true);
    expect(changes.diff.length).toBeLessThanOrEqual(CHANGES_DIFF_MAX);
    expect(changes.diff.endsWith("-a\n")).toBe(true);
  });

  it("texts of ordinary length still search the whole edit bound; longer ones fewer edits", () => {
    expect(editBound(lines(5_000, "old"), lines(5_000, "new"))).toBe(CHANGES_MAX_EDIT_LENGTH);
    expect(editBound(lines(50_000, "old"), lines(50_000, "new"))).toBe(100);
    expect(editBound(lines(50_001, "old"), lines(50_000, "new"))).toBe(0);
  });

  it("a long text with a few lines changed still gets its shortest diff", async () => {
    const before = lines(40_000, "line");
    const after = before.replace("line 20000\n", "line 20000 changed\n");
    const changes = await changesBetween({ version: 1, content: before }, { version: 2, content: after });
    expect([changes.addedLines, changes.removedLines, changes.diffTruncated]).toEqual([1, 1, false]);
    expect(applyPatch(before, changes.diff)).toBe(after);
  });
});
