// Prisma's parameterization graph as the bundles carry it (scripts/prisma-param-graph.mjs): the
// same graph for every lookup Prisma's runtime makes, at a fraction of the heap.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { build, type Plugin } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import { paramGraph } from "../../scripts/build.mjs";
import { decodeGraph, encodeGraph, OFFSET, spreadParameterizationSchema } from "../../scripts/prisma-param-graph.mjs";

const CLASS_TS = "src/generated/prisma/internal/class.ts";
const generated = readFileSync(CLASS_TS, "utf8");

type Schema = { strings: (string | undefined)[]; graph: string };

/** The schema a class.ts text gives Prisma's runtime (its `config.parameterizationSchema = {…}`). */
function schemaOf(source: string): Schema {
  const block = source.match(/config\.parameterizationSchema = \{[\s\S]*?\n\}/)![0];
  const config: { parameterizationSchema?: Schema } = {};
  new Function("config", block)(config);
  return config.parameterizationSchema!;
}

/** Every lookup Prisma's runtime makes, by name: node → field or argument name → edge, enum names and roots by name. */
function lookups({ strings, graph }: Schema) {
  const index = new Map<string | undefined, number>();
  for (let i = 0; i < strings.length; i += 1) index.set(strings[i], i);
  const { inputNodes, outputNodes, roots } = decodeGraph(graph);
  // The edges a lookup by name reaches (the runtime's name → index map keeps a name's last index).
  const byName = <E extends { key: number }>(edges: E[], show: (edge: E) => unknown) =>
    Object.fromEntries(edges.filter((edge) => index.get(strings[edge.key]) === edge.key).map((edge) => [strings[edge.key], show(edge)]));
  return {
    inputs: inputNodes.map((edges) =>
      byName(edges, ({ key: _, enumNameIndex, ...edge }) => ({ ...edge, enumName: enumNameIndex === undefined ? undefined : strings[enumNameIndex] })),
    ),
    outputs: outputNodes.map((edges) => byName(edges, ({ key: _, ...edge }) => edge)),
    roots: Object.fromEntries(roots.map(({ nameIndex, ...root }) => [strings[nameIndex], root])),
  };
}

describe("Prisma's parameterization graph in the bundles", () => {
  it("answers every lookup by name as the generated graph does, with every string index beyond V8's gap", () => {
    const { source, skipped } = spreadParameterizationSchema(generated);
    expect(skipped).toBeUndefined();
    const before = schemaOf(generated);
    const after = schemaOf(source);
    expect(after.strings.length).toBe(OFFSET + before.strings.length);
    expect(lookups(after)).toEqual(lookups(before));
    const { inputNodes, outputNodes } = decodeGraph(after.graph);
    const keys = [...inputNodes, ...outputNodes].flat().map((edge) => edge.key);
    expect(keys.length).toBeGreaterThan(1000);
    expect(Math.min(...keys)).toBeGreaterThanOrEqual(OFFSET);
  });

  it("leaves a generated client of another shape as it was, saying why", () => {
    const otherShape = generated.replace("config.parameterizationSchema = {", "config.parameterizationSchema = { version: 2,");
    expect(spreadParameterizationSchema(otherShape)).toEqual({ source: otherShape, skipped: expect.stringContaining("known shape") });
    // A graph with more in it than the known layout reads (a field added to its records).
    const { graph } = schemaOf(generated);
    const longer = Buffer.concat([Buffer.from(graph, "base64url"), Buffer.from([0])]).toString("base64url");
    const otherLayout = generated.replace(graph, longer);
    expect(spreadParameterizationSchema(otherLayout)).toEqual({ source: otherLayout, skipped: expect.stringContaining("bytes left") });
    expect(encodeGraph(decodeGraph(graph))).toBe(graph);
  });

  const folder = mkdtempSync(path.join("dist", "param-graph-"));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it("costs a new PrismaClient a fraction of the heap it took", { timeout: 60_000 }, async () => {
    const heapOf = async (name: string, plugins: Plugin[]) => {
      const client = path.resolve(folder, `${name}.mjs`);
      await build({
        entryPoints: ["src/generated/prisma/client.ts"],
        bundle: true,
        packages: "external",
        platform: "node",
        format: "esm",
        outfile: client,
        plugins,
        logLevel: "error",
      });
      const probe = path.resolve(folder, `${name}-probe.mjs`);
      writeFileSync(
        probe,
        `const { PrismaClient } = await import(${JSON.stringify(client)});
const adapter = { provider: "postgres", adapterName: "@prisma/adapter-pg", connect: async () => { throw new Error("not connected"); } };
globalThis.gc(); const before = process.memoryUsage().heapUsed;
globalThis.client = new PrismaClient({ adapter });
globalThis.gc(); process.stdout.write(String(process.memoryUsage().heapUsed - before));`,
      );
      return Number(execFileSync(process.execPath, ["--expose-gc", probe], { encoding: "utf8" })) / 1e6;
    };
    const asGenerated = await heapOf("generated", []);
    const bundled = await heapOf("bundled", [paramGraph]);
    expect(bundled, `a new client: ${asGenerated.toFixed(1)} MB of heap as generated, ${bundled.toFixed(1)} MB bundled`).toBeLessThan(asGenerated / 3);
  });
});
