// Lists the functions in src/ longer than 60 lines and the files longer than 300: Dossier keeps
// both small enough to read in one go. Reads the sources with the TypeScript compiler API (the
// installed typescript), so a function is what TypeScript calls one: declarations, methods,
// arrow functions and function expressions, each measured from its first to its last line.
// Prints one line per finding, longest first; exits 0 (a report, not a gate).
//   node scripts/long-functions.mjs [folder=src] [--functions=60] [--files=300]
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const args = process.argv.slice(2);
const option = (name, fallback) => Number(args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);
const root = args.find((a) => !a.startsWith("--")) ?? "src";
const FUNCTION_MAX = option("functions", 60);
const FILE_MAX = option("files", 300);

/** TypeScript sources under `dir`, generated code left out (nobody writes it by hand). */
function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "generated" || entry.name === "node_modules" ? [] : sources(full);
    return /\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [full] : [];
  });
}

/** A readable name for a function node: its own, or the variable, property or method it is assigned to. */
function nameOf(node, file) {
  if (node.name) return node.name.getText(file);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText(file);
  if (ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText(file).slice(0, 40)})`;
  return "(anonymous)";
}

const isFunction = (node) =>
  ts.isFunctionDeclaration(node) ||
  ts.isFunctionExpression(node) ||
  ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node);

const findings = [];
for (const fileName of sources(root)) {
  const text = readFileSync(fileName, "utf8");
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const lines = file.getLineAndCharacterOfPosition(text.length).line + (text.endsWith("\n") ? 0 : 1);
  if (lines > FILE_MAX) findings.push({ kind: "file", lines, where: fileName, name: "" });
  const visit = (node) => {
    if (isFunction(node) && node.body) {
      const start = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
      const end = file.getLineAndCharacterOfPosition(node.getEnd()).line;
      const length = end - start + 1;
      if (length > FUNCTION_MAX) findings.push({ kind: "function", lines: length, where: `${fileName}:${start + 1}`, name: nameOf(node, file) });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
}

findings.sort((a, b) => (a.kind === b.kind ? b.lines - a.lines : a.kind === "file" ? -1 : 1));
for (const f of findings) console.log(`${f.kind.padEnd(8)} ${String(f.lines).padStart(5)} lines  ${f.where}${f.name ? `  ${f.name}` : ""}`);
if (findings.length === 0) console.log(`No function over ${FUNCTION_MAX} lines and no file over ${FILE_MAX} lines in ${root}/.`);
