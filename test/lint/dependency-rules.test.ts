// The layer rules of docs/architecture.md, attacked: a small project breaks each rule of
// .dependency-cruiser.cjs once (and makes the import each rule allows), and `npm run lint`'s own
// dependency-cruiser, with Dossier's configuration, must report exactly the broken ones. A rule
// that silently stopped matching (a renamed folder, generated code dropped from the graph) fails
// here instead of letting the layers drift.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const project = mkdtempSync(path.join(tmpdir(), "dossier-layers-"));
afterAll(() => rmSync(project, { recursive: true, force: true }));

/** A module importing `to` (a path in the project, or a package name). */
const importing = (to: string, from: string) => {
  const target = to.startsWith("src/") || to.startsWith("sdk/") ? path.relative(path.dirname(from), to).replace(/\.ts$/, ".js") : to;
  return `import * as imported from "${target.startsWith(".") || !to.includes("/") ? target : `./${target}`}";\nexport const used = imported;\n`;
};

/** [importer, imported]: each edge of the probe project. */
const edges: [string, string][] = [
  // The runtime reaches the database only through its adapters.
  ["src/runtime/loop/reads-rows.ts", "src/generated/prisma/client.ts"],
  ["src/runtime/adapters/row-adapter.ts", "src/generated/prisma/client.ts"],
  // Only the entry points import the composition roots.
  ["src/graphql/wiring.ts", "src/compose/core.ts"],
  ["src/main.ts", "src/compose/core.ts"],
  // The domain knows nothing of the runtime; the runtime nothing of the API.
  ["src/domain/knows-runtime.ts", "src/runtime/ports/model.ts"],
  ["src/runtime/tools/knows-api.ts", "src/graphql/schema.ts"],
  // The GraphQL layer sees the runtime's ports only.
  ["src/graphql/through-ports.ts", "src/runtime/ports/model.ts"],
  ["src/graphql/into-internals.ts", "src/runtime/loop/executor.ts"],
  // Settings are read at the roots.
  ["src/runtime/loop/reads-settings.ts", "src/config.ts"],
  // Vendor SDKs live in adapters.
  ["src/domain/calls-vendor.ts", "openai"],
  ["src/runtime/adapters/openai-model.ts", "openai"],
  // The spill store knows nothing of the tools.
  ["src/runtime/spill/knows-tools.ts", "src/runtime/tools/read-spill.ts"],
  // The SDK stands alone.
  ["sdk/client.ts", "src/domain/model.ts"],
  // The runtime's core works through its ports; the roots pick the adapters behind them.
  ["src/runtime/loop/knows-adapter.ts", "src/runtime/adapters/openai-model.ts"],
  ["src/compose/runtime.ts", "src/runtime/adapters/openai-model.ts"],
  // The runtime's ports import the domain's vocabulary, nothing else of the runtime.
  ["src/runtime/ports/knows-loop.ts", "src/runtime/loop/executor.ts"],
  ["src/runtime/ports/run-state.ts", "src/domain/runs/vocabulary.ts"],
  // The domain's folders form no cycle, even without a cycle of modules.
  ["src/domain/runs/settles.ts", "src/domain/trace/writes.ts"],
  ["src/domain/trace/writes.ts", "src/domain/runs/holder.ts"],
  // No cycles.
  ["src/domain/cycle-a.ts", "src/domain/cycle-b.ts"],
  ["src/domain/cycle-b.ts", "src/domain/cycle-a.ts"],
];

function writeProject(): void {
  const write = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(project, file)), { recursive: true });
    writeFileSync(path.join(project, file), text);
  };
  const importsOf = new Map<string, string[]>();
  for (const [from, to] of edges) importsOf.set(from, [...(importsOf.get(from) ?? []), to]);
  const files = new Set(edges.flatMap(([from, to]) => (to.includes("/") ? [from, to] : [from])));
  for (const file of files) {
    const imports = importsOf.get(file) ?? [];
    write(
      file,
      imports.length === 0 ? "export const value = 1;\n" : imports.map((to, i) => importing(to, file).replaceAll("imported", `imported${i}`)).join(""),
    );
  }
  write("node_modules/openai/package.json", JSON.stringify({ name: "openai", version: "1.0.0", main: "index.js" }));
  write("node_modules/openai/index.js", "module.exports = {};\n");
  write("tsconfig.json", JSON.stringify({ compilerOptions: { module: "nodenext", moduleResolution: "nodenext" } }));
}

describe("the dependency rules npm run lint enforces", () => {
  it("report every import that breaks a layer rule, and none that a rule allows", async () => {
    writeProject();
    const depcruise = path.join(root, "node_modules", ".bin", "depcruise");
    const config = path.join(root, ".dependency-cruiser.cjs");
    const { stdout } = await promisify(execFile)(depcruise, ["src", "sdk", "--config", config, "--output-type", "json", "--no-cache"], {
      cwd: project,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }));
    const { summary } = JSON.parse(stdout) as { summary: { violations: { rule: { name: string }; from: string; to: string }[] } };
    const reported = summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to.replace(/^node_modules\/openai\/.*$/, "openai")}`).sort();
    expect(reported).toEqual(
      [
        "runtime-on-its-ports: src/runtime/loop/reads-rows.ts → src/generated/prisma/client.ts",
        "no-layer-imports-a-composition-root: src/graphql/wiring.ts → src/compose/core.ts",
        "domain-is-independent: src/domain/knows-runtime.ts → src/runtime/ports/model.ts",
        "runtime-serves-no-api: src/runtime/tools/knows-api.ts → src/graphql/schema.ts",
        "graphql-sees-runtime-ports-only: src/graphql/into-internals.ts → src/runtime/loop/executor.ts",
        "configuration-stays-at-the-roots: src/runtime/loop/reads-settings.ts → src/config.ts",
        "vendor-sdks-in-adapters: src/domain/calls-vendor.ts → openai",
        "spill-below-tools: src/runtime/spill/knows-tools.ts → src/runtime/tools/read-spill.ts",
        "sdk-stands-alone: sdk/client.ts → src/domain/model.ts",
        "runtime-core-imports-no-adapter: src/runtime/loop/knows-adapter.ts → src/runtime/adapters/openai-model.ts",
        "runtime-ports-stand-alone: src/runtime/ports/knows-loop.ts → src/runtime/loop/executor.ts",
        "domain-folders-acyclic: src/domain/runs → src/domain/trace",
        "domain-folders-acyclic: src/domain/trace → src/domain/runs",
        // A cycle is reported once, at the edge where dependency-cruiser first meets it.
        "no-circular: src/domain/cycle-a.ts → src/domain/cycle-b.ts",
      ].sort(),
    );
  });
});
