// A4: the SDK covers every public root field, stands on its own (no imports from src/), builds to
// JavaScript and declarations, packs as @dossier/sdk, and its built JavaScript works from plain
// Node.js against a running server — typed error unions included.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { buildSchema, type DocumentNode, Kind, parse, type SelectionNode, visit } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../sdk/client.js";
import { CreateWorkspaceDocument } from "../../sdk/generated/graphql.js";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { createDemoModel } from "../../src/runtime/adapters/demo-model.js";
import { admit } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const run = promisify(execFile);
const sdkDir = path.join(projectRoot, "sdk");

function operationDocuments(): DocumentNode[] {
  const dir = path.join(sdkDir, "operations");
  return readdirSync(dir)
    .filter((file) => file.endsWith(".graphql"))
    .map((file) => parse(readFileSync(path.join(dir, file), "utf8")));
}

describe("the SDK", () => {
  it("has an operation for every public query, mutation and subscription field", () => {
    const schema = buildSchema(readFileSync(path.join(projectRoot, "schema/schema.graphql"), "utf8"));
    const documents = operationDocuments();
    // Root fields may be selected directly or through a fragment on the root type.
    const used = { Query: new Set<string>(), Mutation: new Set<string>(), Subscription: new Set<string>() };
    const rootOf = { query: "Query", mutation: "Mutation", subscription: "Subscription" } as const;
    const fragments = new Map(
      documents.flatMap((d) => d.definitions).flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])),
    );
    const collect = (root: keyof typeof used, selections: readonly SelectionNode[]) => {
      for (const selection of selections) {
        if (selection.kind === Kind.FIELD) used[root].add(selection.name.value);
        else if (selection.kind === Kind.INLINE_FRAGMENT) collect(root, selection.selectionSet.selections);
        else {
          const fragment = fragments.get(selection.name.value);
          if (fragment) collect(root, fragment.selectionSet.selections);
        }
      }
    };
    for (const document of documents) {
      visit(document, {
        OperationDefinition(node) {
          collect(rootOf[node.operation], node.selectionSet.selections);
        },
      });
    }
    const roots = { Query: schema.getQueryType(), Mutation: schema.getMutationType(), Subscription: schema.getSubscriptionType() };
    const missing = (["Query", "Mutation", "Subscription"] as const).flatMap((root) =>
      Object.keys(roots[root]?.getFields() ?? {})
        .filter((field) => !used[root].has(field))
        .map((field) => `${root}.${field}`),
    );
    expect(missing).toEqual([]);
    // Sanity: the walk really saw the schema's roots.
    expect(used.Subscription.has("traceUpdates")).toBe(true);
  });

  const importsOf = (file: string) =>
    [...readFileSync(path.join(sdkDir, file), "utf8").matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]!);

  it("imports nothing from the server's sources", () => {
    const files = readdirSync(sdkDir)
      .filter((file) => file.endsWith(".ts"))
      .concat("generated/graphql.ts");
    expect(files).toEqual(expect.arrayContaining(["client.ts", "index.ts", "run-store.ts", "react.ts"]));
    for (const file of files) {
      // React only in the hooks' own entry point (@dossier/sdk/react).
      const packages = ["graphql", "graphql-ws", "ws", "@graphql-typed-document-node/core", ...(file === "react.ts" ? ["react"] : [])];
      const allowed = (s: string) => s.startsWith("./") || packages.includes(s);
      expect(
        importsOf(file).filter((s) => !allowed(s)),
        file,
      ).toEqual([]);
    }
  });

  it("never loads React from its main entry point: React is an optional peer, for @dossier/sdk/react only", () => {
    const reached = new Set<string>();
    const visitFile = (file: string) => {
      if (reached.has(file)) return;
      reached.add(file);
      for (const specifier of importsOf(file)) if (specifier.startsWith("./")) visitFile(path.join(path.dirname(file), specifier).replace(/\.js$/, ".ts"));
    };
    visitFile("index.ts");
    expect(reached).toContain("run-store.ts");
    expect(reached).not.toContain("react.ts");
    const manifest = JSON.parse(readFileSync(path.join(sdkDir, "package.json"), "utf8"));
    expect(manifest.exports["./react"]).toEqual({ types: "./dist/react.d.ts", import: "./dist/react.js" });
    expect(manifest.peerDependenciesMeta.react).toEqual({ optional: true });
    expect(manifest.dependencies.react).toBeUndefined();
  });

  it("narrows a typed error union by __typename", async () => {
    const t = await startTestApp("pglite");
    try {
      const result = (await t.client.request(CreateWorkspaceDocument, { input: { title: "", goal: "" } })).createWorkspace;
      if (result.__typename === "ValidationError") {
        // Only the ValidationError member has `issues`; the compiler knows it here.
        expect(result.issues.map((issue) => issue.field)).toContain("title");
      } else {
        expect.fail(`expected a ValidationError, got ${result.__typename}`);
      }
    } finally {
      await t.close();
    }
  });

  it("reads a whole trace with runTrace, page after page: every span and event once, in order", async () => {
    const t = await startTestApp("pglite", {
      runtime: { model: createDemoModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sdk-")) },
    });
    try {
      const { run } = await admit(t.client, { question: "Trace me" });
      await settled(t.client, run.id);
      // More events on the root span than a page of two holds.
      const prisma = t.app.db.prisma;
      const traceId = Buffer.from(run.id, "base64").toString("utf8").split(":")[1]!;
      const root = await prisma.span.findFirstOrThrow({ where: { traceId, parentId: null } });
      for (let i = 0; i < 5; i += 1) {
        await prisma.spanEvent.create({ data: { spanId: root.id, seq: 1000 + i, kind: "THINKING", payload: `extra ${i}`, payloadSize: 7, at: new Date() } });
      }
      const spans = await prisma.span.findMany({
        where: { traceId },
        orderBy: [{ startedAt: "asc" }, { id: "asc" }],
        include: { events: { orderBy: { seq: "asc" } } },
      });
      expect(spans.length).toBeGreaterThan(2);

      const requests: string[] = [];
      const counting = createClient({
        url: "http://dossier.test/graphql",
        fetch: (async (input: string, init?: RequestInit) => {
          requests.push(JSON.parse(String(init?.body)).query.match(/^(?:query|mutation) (\w+)/m)?.[1] ?? "?");
          return t.app.yoga.fetch(new Request(input, init));
        }) as typeof fetch,
      });
      const whole = (await counting.runTrace(run.id, { pageSize: 2 }))!;
      expect(whole.trace!.spans.map((span) => span.id)).toEqual(spans.map((span) => encodeGlobalId("Span", span.id)));
      expect(whole.trace!.spans.map((span) => span.events.map((event) => event.seq))).toEqual(
        spans.map((span) => span.events.map((event) => String(event.seq))),
      );
      expect(whole.attempts.map((attempt) => attempt.number)).toEqual([1]);
      // It took several pages of spans and of the root span's events to get there.
      expect(requests.filter((name) => name === "TraceSpans").length).toBeGreaterThanOrEqual(Math.ceil(spans.length / 2) - 1);
      expect(requests.filter((name) => name === "SpanEvents").length).toBeGreaterThanOrEqual(2);
      // With the default page sizes one request reads it all, and it is the same trace.
      requests.length = 0;
      expect(await counting.runTrace(run.id)).toEqual(whole);
      expect(requests).toEqual(["RunTrace"]);
      expect(await counting.runTrace(encodeGlobalId("Run", "no-such-run"))).toBeNull();
    } finally {
      await t.close();
    }
  });

  describe("as a package", () => {
    let t: TestApp;
    beforeAll(async () => {
      await run("npm", ["run", "build:sdk"], { cwd: projectRoot });
      t = await startTestApp("pglite", { listen: true });
    }, 120_000);
    afterAll(async () => {
      await t?.close();
    });

    it("builds to JavaScript with declarations, and packs them", async () => {
      for (const file of [
        "index.js",
        "index.d.ts",
        "client.js",
        "client.d.ts",
        "react.js",
        "react.d.ts",
        "run-store.js",
        "generated/graphql.js",
        "generated/graphql.d.ts",
      ]) {
        expect(existsSync(path.join(sdkDir, "dist", file)), file).toBe(true);
      }
      const manifest = JSON.parse(readFileSync(path.join(sdkDir, "package.json"), "utf8"));
      expect(manifest.name).toBe("@dossier/sdk");
      // The persisted-documents manifest ships with the package, for a server or gateway to trust.
      expect(manifest.exports["./persisted-documents.json"]).toBe("./generated/persisted-documents.json");
      expect(Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies }).sort()).toEqual(
        ["@graphql-typed-document-node/core", "graphql", "graphql-ws", "react", "ws"].sort(),
      );
      const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: sdkDir });
      const files = (JSON.parse(stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
      expect(files).toEqual(
        expect.arrayContaining(["package.json", "dist/index.js", "dist/index.d.ts", "dist/generated/graphql.d.ts", "generated/persisted-documents.json"]),
      );
      expect(files.some((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toBe(false);
      // The declarations reference no server source.
      expect(readFileSync(path.join(sdkDir, "dist/client.d.ts"), "utf8")).not.toMatch(/\.\.\/src\//);
    });

    it("its built JavaScript works from plain Node.js: a request, an error union, a subscription", async () => {
      const script = `
        import { createClient, CreateWorkspaceDocument, WorkspaceEventsDocument, UpdateGoalDocument } from ${JSON.stringify(path.join(sdkDir, "dist/index.js"))};
        const client = createClient({ url: process.env.URL });
        const created = (await client.request(CreateWorkspaceDocument, { input: { title: "Packaged", goal: "Check the built SDK" } })).createWorkspace;
        const invalid = (await client.request(CreateWorkspaceDocument, { input: { title: "", goal: "" } })).createWorkspace;
        const events = client.subscribe(WorkspaceEventsDocument, { workspaceId: created.workspace.id });
        const first = events.next();
        // The subscription has no first update to tell that it listens: the goal changes until an
        // event arrives (on a busy machine the socket may open after the first change).
        let seen = false;
        first.then(() => { seen = true; });
        for (let version = 1; !seen; version += 1) {
          await client.request(UpdateGoalDocument, { input: { workspaceId: created.workspace.id, expectedVersion: version, statement: "A new goal " + version } });
          await Promise.race([first, new Promise((resolve) => setTimeout(resolve, 500))]);
        }
        const event = (await first).value;
        await events.return();
        await client.close();
        console.log(JSON.stringify({ created: created.__typename, invalid: invalid.__typename, event: event.workspaceEvents.kind }));
      `;
      const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], {
        cwd: projectRoot,
        env: { PATH: process.env.PATH ?? "", URL: t.server!.url },
        timeout: 30_000,
      });
      expect(JSON.parse(stdout.trim())).toEqual({ created: "CreateWorkspaceSuccess", invalid: "ValidationError", event: "GOAL_UPDATED" });
    });
  });
});
