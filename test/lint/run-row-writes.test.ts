// A run's row changes only through its owner, src/domain/runs (docs/architecture.md, "A run"):
// every state change is a row of its transition table, applied by one function. A write to the
// run row anywhere else would be a transition nobody listed, with its own idea of the side
// effects. This reads every source file under src/ (generated code aside) for the three ways of
// writing the row and fails on any outside src/domain/runs/.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const WRITES = [/UPDATE\s+run\b/i, /\brun\.update\(/, /\brun\.updateMany\(/];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return full.endsWith(path.join("src", "generated")) ? [] : sources(full);
    return /\.(ts|mts|cts|js|mjs)$/.test(entry.name) ? [full] : [];
  });
}

/** `file:line: text` of every write to the run row in a file. */
const writesIn = (file: string, text: string) =>
  text
    .split("\n")
    .flatMap((line, index) => (WRITES.some((pattern) => pattern.test(line)) ? [`${path.relative(root, file)}:${index + 1}: ${line.trim()}`] : []));

describe("writes to a run's row", () => {
  const files = sources(path.join(root, "src"));

  it("are found where they are written (the check sees the three forms)", () => {
    const owned = files.filter((file) => file.includes(`${path.sep}domain${path.sep}runs${path.sep}`));
    const found = owned.flatMap((file) => writesIn(file, readFileSync(file, "utf8")));
    expect(found.some((hit) => /UPDATE\s+run\b/i.test(hit))).toBe(true);
    expect(writesIn("probe.ts", "await tx.run.update({ where })\nawait tx.run.updateMany({})\n`UPDATE run SET x = 1`")).toHaveLength(3);
    expect(writesIn("probe.ts", "tx.runAttempt.updateMany({})\n`UPDATE run_attempt SET`\nrun.updatedAt")).toEqual([]);
  });

  it("happen only in src/domain/runs/", () => {
    const outside = files.filter((file) => !file.includes(`${path.sep}domain${path.sep}runs${path.sep}`));
    expect(outside.length).toBeGreaterThan(100);
    expect(outside.flatMap((file) => writesIn(file, readFileSync(file, "utf8")))).toEqual([]);
  });
});
