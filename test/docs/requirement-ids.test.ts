// Requirement ids (W4, R14, T3, A7, S2 …) cited in comments, the README, the schema and docs/
// all resolve to a requirement that docs/requirements.md defines, each under its own lowercase
// anchor, so a reader can follow any of them (docs/requirements.md#r14). Ranges ("R3–R9") stand
// for every id in them. The ids are read from the files, so a new citation is checked as written.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const read = (file: string) => readFileSync(path.join(root, file), "utf8");

/** Folders whose source comments may cite requirements; generated code is left out. */
const SOURCE_FOLDERS = ["src", "test", "bench", "examples", "scripts", "sdk"];
const SKIPPED = new Set(["node_modules", "generated", "dist"]);
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
/** Prose that cites requirements as a whole: every line of it is read. */
const PROSE = ["README.md", "schema/schema.graphql", ...readdirSync(path.join(root, "docs")).map((name) => `docs/${name}`)];

const ID = /\b([WRTAS])(\d{1,2})\b/g;
const RANGE = /\b([WRTAS])(\d{1,2})\s*[–—-]\s*\1?(\d{1,2})\b/g;

/** The requirement ids a text cites: single ids, lists ("W14, W15", "A3/A4") and ranges ("W7–W11"). */
function citedIds(text: string): Set<string> {
  const ids = new Set<string>();
  for (const [, letter, number] of text.matchAll(ID)) ids.add(`${letter}${Number(number)}`);
  for (const [, letter, from, to] of text.matchAll(RANGE)) {
    for (let n = Number(from); n <= Number(to); n += 1) ids.add(`${letter}${n}`);
  }
  return ids;
}

/** The ids docs/requirements.md defines: headings `### <a id="r14"></a>R14 …`. */
function definedIds(markdown: string): { ids: Set<string>; problems: string[] } {
  const ids = new Set<string>();
  const problems: string[] = [];
  for (const line of markdown.split("\n")) {
    const heading = /^#{2,4}\s+(?:<a id="([^"]*)"><\/a>)?([WRTAS]\d{1,2})\b/.exec(line);
    if (!heading) continue;
    const [, anchor, id] = heading;
    if (anchor !== id!.toLowerCase()) problems.push(`${id} needs the anchor <a id="${id!.toLowerCase()}"></a>: ${line}`);
    if (ids.has(id!)) problems.push(`${id} is defined twice`);
    ids.add(id!);
  }
  return { ids, problems };
}

/** Every comment of a source file (line, block and JSDoc), found by TypeScript's own parser. */
function commentsOf(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const seen = new Set<number>();
  const comments: string[] = [];
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) {
      if (seen.has(range.pos)) continue;
      seen.add(range.pos);
      comments.push(text.slice(range.pos, range.end));
    }
  };
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    // A JSDoc node is its own comment, already collected as the leading trivia of its owner.
    if (!ts.isJSDoc(node)) for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return comments;
}

function sourceFiles(folder: string): string[] {
  const entries = readdirSync(path.join(root, folder), { withFileTypes: true });
  return entries.flatMap((entry) => {
    const file = `${folder}/${entry.name}`;
    if (entry.isDirectory()) return SKIPPED.has(entry.name) ? [] : sourceFiles(file);
    return SOURCE.test(entry.name) && !entry.name.endsWith(".d.ts") ? [file] : [];
  });
}

const requirements = definedIds(read("docs/requirements.md"));
const undefinedIn = (file: string, texts: string[]) =>
  texts.flatMap((text) => [...citedIds(text)].filter((id) => !requirements.ids.has(id)).map((id) => `${file}: ${id}`));

describe("requirement ids", () => {
  it("reads lists and ranges of ids", () => {
    expect([...citedIds("R0, R1 (R3–R5) and W14/W15; T1-T3, S2 - 4; not ES2022 or R2D2")].sort()).toEqual(
      ["R0", "R1", "R3", "R4", "R5", "S2", "S3", "S4", "T1", "T2", "T3", "W14", "W15"].sort(),
    );
  });

  it("docs/requirements.md defines each requirement once, under its lowercase anchor", () => {
    expect(requirements.problems).toEqual([]);
    // Each family is numbered without holes (the runtime's starts at R0, its sessions), so a
    // requirement dropped from the page by mistake shows up here.
    for (const [letter, first] of [
      ["W", 1],
      ["R", 0],
      ["T", 1],
      ["A", 1],
      ["S", 1],
    ] as const) {
      const numbers = [...requirements.ids].filter((id) => id[0] === letter).map((id) => Number(id.slice(1)));
      expect(
        numbers.sort((a, b) => a - b),
        letter,
      ).toEqual(numbers.map((_, index) => first + index));
      expect(numbers.length, letter).toBeGreaterThan(0);
    }
  });

  it("every id a source comment cites is defined in docs/requirements.md", () => {
    const files = SOURCE_FOLDERS.flatMap(sourceFiles);
    expect(files.length).toBeGreaterThan(100);
    const missing = files.flatMap((file) => undefinedIn(file, commentsOf(file, read(file))));
    expect(missing, "cite only requirements docs/requirements.md defines, or define them there").toEqual([]);
  });

  it("every id and requirement link in the README, the schema and docs/ resolves", () => {
    const missing = PROSE.flatMap((file) => undefinedIn(file, [read(file)]));
    const anchors = PROSE.flatMap((file) =>
      [...read(file).matchAll(/requirements\.md#([a-z]\d+)\b/g)]
        .filter(([, anchor]) => !requirements.ids.has(anchor!.toUpperCase()))
        .map(([link]) => `${file}: ${link}`),
    );
    expect([...missing, ...anchors]).toEqual([]);
  });
});
