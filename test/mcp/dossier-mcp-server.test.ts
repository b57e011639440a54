// A8: another agent works in a workspace through the MCP server — a separate process speaking
// MCP over stdio, talking to a running Dossier over HTTP with one principal's API key.
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LinkToWorkspaceDocument, UpdateCheckpointDocument } from "../../sdk/generated/graphql.js";
import { contentHash } from "../../src/domain/research/publication-service.js";
import { dossierMcpTools } from "../../src/mcp/dossier-mcp-server.js";
import { createDemoModel } from "../../src/runtime/adapters/demo-model.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { connectMcp } from "../support/mcp-process.js";
import { projectRoot } from "../support/processes.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe("the Dossier MCP server", () => {
  let t: TestApp;
  let alice: Awaited<ReturnType<typeof connectMcp>>;
  let bob: Awaited<ReturnType<typeof connectMcp>>;
  let workspaceId: string;
  let publicationId: string;
  let aliceKey: string;

  beforeAll(async () => {
    t = await startTestApp("pglite", {
      listen: true,
      authRequired: true,
      runtime: { model: createDemoModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-mcp-")) },
    });
    aliceKey = await t.createPrincipal("alice");
    const bobKey = await t.createPrincipal("bob");
    // Alice's research, made through the API as she would.
    const api = t.as(aliceKey);
    const workspace = await createWorkspace(api, "Map EU battery cell capacity for 2027");
    workspaceId = workspace.id;
    const first = await publish(api, { title: "EU cell makers", content: "Northvolt: 16 GWh (2024 plan)", asOf: "2025-01-01T00:00:00.000Z" });
    publicationId = first.version.publication.id;
    await publish(api, { publicationId, content: "Northvolt: in restructuring; ACC: 13 GWh" });
    expectType((await api.request(LinkToWorkspaceDocument, { input: { workspaceId, targetId: publicationId } })).linkToWorkspace, "LinkToWorkspaceSuccess");
    expectType(
      (
        await api.request(UpdateCheckpointDocument, {
          input: { workspaceId, expectedRevision: 0, summary: "Two makers checked", questions: [{ text: "What about Asian makers in the EU?" }] },
        })
      ).updateCheckpoint,
      "UpdateCheckpointSuccess",
    );
    [alice, bob] = await Promise.all([
      connectMcp({ DOSSIER_URL: t.server!.url, DOSSIER_API_KEY: aliceKey }),
      connectMcp({ DOSSIER_URL: t.server!.url, DOSSIER_API_KEY: bobKey }),
    ]);
  }, 120_000);

  afterAll(async () => {
    await alice?.client.close();
    await bob?.client.close();
    await t?.close();
  });

  it("lists its tools with input schemas", async () => {
    const { tools } = await alice.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...dossierMcpTools].sort());
    const admit = tools.find((tool) => tool.name === "admit_run")!;
    expect(admit.inputSchema.required).toEqual(expect.arrayContaining(["workspaceId", "question"]));
    expect(tools.find((tool) => tool.name === "read_material")!.annotations?.readOnlyHint).toBe(true);
  });

  it("reads a workspace: list, history catalog, an exact version, the checkpoint", async () => {
    const listed = await alice.json("list_workspaces");
    expect(listed.workspaces).toEqual([
      expect.objectContaining({ id: workspaceId, status: "ACTIVE", goal: { version: 1, statement: "Map EU battery cell capacity for 2027" } }),
    ]);

    const catalog = await alice.json("history_catalog", { workspaceId });
    expect(catalog.complete).toBe(true);
    expect(catalog.entries).toHaveLength(1);
    expect(catalog.entries[0]).toMatchObject({ publicationId, title: "EU cell makers", latestVersion: 2 });
    expect(catalog.entries[0].versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);
    expect(JSON.stringify(catalog)).not.toContain("Northvolt"); // the catalog carries no content
    expect(catalog).toMatchObject({ truncatedReason: null, pageInfo: { hasNextPage: false } });

    // Search finds the versions by words of their content, with a snippet for each.
    const found = await alice.json("search_history", { workspaceId, query: "restructuring" });
    expect(found).toMatchObject({ complete: true, hits: [{ publicationId, version: 2, snippet: expect.stringContaining("«restructuring»") }] });

    // Exactly the version asked for, not the newest.
    const v1 = await alice.json("read_material", { publicationId, version: 1 });
    expect(v1).toMatchObject({ status: "AVAILABLE", version: 1, asOf: "2025-01-01T00:00:00.000Z", content: "Northvolt: 16 GWh (2024 plan)" });
    const missing = await alice.call("read_material", { publicationId, version: 9 });
    expect(missing.isError).toBe(true);
    expect(missing.content[0]!.text).toMatch(/Version 9 cannot be read/);

    const { checkpointRevision, checkpoint } = await alice.json("get_checkpoint", { workspaceId });
    expect(checkpointRevision).toBe(1);
    expect(checkpoint).toMatchObject({
      __typename: "Checkpoint",
      summary: "Two makers checked",
      questions: [expect.objectContaining({ text: "What about Asian makers in the EU?", status: "OPEN" })],
    });
  });

  it("admits a run in the workspace and follows it to its answer", async () => {
    const admitted = await alice.json("admit_run", { workspaceId, question: "Which makers are missing?", idempotencyKey: "mcp-1" });
    expect(admitted).toMatchObject({ replayed: false, run: { status: "QUEUED", question: "Which makers are missing?" } });
    const again = await alice.json("admit_run", { workspaceId, question: "Which makers are missing?", idempotencyKey: "mcp-1" });
    expect(again).toMatchObject({ replayed: true, run: { id: admitted.run.id } });

    const run = await vi.waitFor(
      async () => {
        const current = await alice.json("get_run", { runId: admitted.run.id });
        expect(["QUEUED", "RUNNING"]).not.toContain(current.status);
        return current;
      },
      { timeout: 10_000 },
    );
    expect(run.status).toBe("SUCCEEDED");
    // The run worked inside the workspace: the demo answers the question and names the context
    // it was given, which holds the checkpoint.
    expect(run.answer).toContain('You asked: "Which makers are missing?"');
    expect(run.answer).toContain('research workspace "Batteries"');
    const { messages } = await settled(t.as(aliceKey), admitted.run.id);
    expect(messages.edges.find((edge) => edge.node.role === "CONTEXT")!.node.content).toContain("Summary: Two makers checked");

    const invalid = await alice.call("admit_run", { workspaceId, question: "x".repeat(100_000) });
    expect(invalid.isError).toBe(true);
    expect(invalid.content[0]!.text).toMatch(/^ValidationError: /);
  });

  it("another principal's key sees nothing of the first's workspace", async () => {
    expect((await bob.json("list_workspaces")).workspaces).toEqual([]);
    const refusals = await Promise.all([
      bob.call("history_catalog", { workspaceId }),
      bob.call("get_checkpoint", { workspaceId }),
      bob.call("read_material", { publicationId, version: 1 }),
      bob.call("admit_run", { workspaceId, question: "let me in" }),
    ]);
    for (const refusal of refusals) {
      expect(refusal.isError).toBe(true);
      expect(refusal.content[0]!.text).not.toContain("Northvolt");
      expect(refusal.content[0]!.text).not.toContain("Two makers checked");
    }
    const { run } = await admit(t.as(aliceKey), { question: "private question" });
    const foreignRun = await bob.call("get_run", { runId: run.id });
    expect(foreignRun.isError).toBe(true);
    expect(foreignRun.content[0]!.text).not.toContain("private question");
    expect((await alice.json("get_run", { runId: run.id })).question).toBe("private question");
    expect(refusals[0]!.content[0]!.text).toMatch(/No workspace with id .* is visible to this API key/);
    expect(refusals[3]!.content[0]!.text).toMatch(/^NotFoundError: /);
    expect((await alice.json("list_workspaces")).workspaces).toHaveLength(1);
  });

  it("talks to Dossier only through the SDK: it imports nothing of the server but the settings reader", () => {
    // src/config.ts (with src/config-files.ts, its JSON settings, src/config-rules.ts, the rules
    // values are checked by, src/config-mcp-client.ts, the MCP client program's own,
    // src/config-rate-limits.ts, the rate limits' figures, src/config-sandbox.ts and
    // src/config-webhooks.ts, the sandbox folders' and the webhooks' settings, and
    // src/config-types.ts, the settings' shape) reads every setting of every Dossier program and imports nothing else of the project
    // but the runtime's types of what it reads (agent profiles, spill policies), which leave
    // nothing in a bundle.
    const imports = (file: string, kind: "value" | "type") => {
      const statement = kind === "type" ? /^(?:import|export)\s+type\b[^;]*?from\s+"(\.[^"]*)"/gm : /^(?:import|export)\s+(?!type\b)[^;]*?from\s+"(\.[^"]*)"/gm;
      return [...readFileSync(path.join(projectRoot, file), "utf8").matchAll(statement)].map((m) => m[1]!);
    };
    expect(imports("src/config.ts", "value")).toEqual([
      "./config-files.js",
      "./config-access.js",
      "./config-sign-in.js",
      "./config-mcp-client.js",
      "./config-rate-limits.js",
      "./config-sandbox.js",
      "./config-webhooks.js",
      "./config-rules.js",
      "./config-rules.js",
    ]);
    // The rate limits' settings are computed from values already checked: they import nothing.
    expect(imports("src/config-rate-limits.ts", "value")).toEqual([]);
    // The MCP client program's own settings check values with the shared rules only.
    expect(imports("src/config-mcp-client.ts", "value")).toEqual(["./config-rules.js"]);
    expect(imports("src/config-files.ts", "value")).toEqual(["./config-rules.js"]);
    expect(imports("src/config-types.ts", "value")).toEqual([]);
    // The sign-in settings check values with the shared rules only.
    expect(imports("src/config-sign-in.ts", "value")).toEqual(["./config-rules.js"]);
    expect(imports("src/config-rules.ts", "value")).toEqual([]);
    // The sandbox folders' and the webhooks' settings check values with the shared rules only.
    expect(imports("src/config-sandbox.ts", "value")).toEqual(["./config-rules.js"]);
    expect(imports("src/config-webhooks.ts", "value")).toEqual(["./config-rules.js"]);
    // The access settings check values with three leaf modules of their own rules (a STDIO command
    // line's, a loopback host's, a trusted proxy's), which import nothing of the project.
    expect(imports("src/config-access.ts", "value")).toEqual([
      "./domain/capabilities/stdio-policy.js",
      "./config-rules.js",
      "./server/allowed-hosts.js",
      "./server/client-address.js",
    ]);
    for (const leaf of ["src/domain/capabilities/stdio-policy.ts", "src/server/allowed-hosts.ts", "src/server/client-address.ts"]) {
      expect([...imports(leaf, "value"), ...imports(leaf, "type")], leaf).toEqual([]);
    }
    for (const file of [
      "src/config.ts",
      "src/config-files.ts",
      "src/config-rules.ts",
      "src/config-types.ts",
      "src/config-mcp-client.ts",
      "src/config-sandbox.ts",
      "src/config-webhooks.ts",
    ]) {
      expect(
        // The runtime's types of what it reads, the leaf module of a STDIO command line's type, and the settings' own files.
        imports(file, "type").filter(
          (s) => !s.startsWith("./runtime/") && s !== "./domain/capabilities/stdio-policy.js" && !/^\.\/config-[a-z-]+\.js$/.test(s),
        ),
        file,
      ).toEqual([]);
    }
    const dir = path.join(projectRoot, "src/mcp");
    for (const file of readdirSync(dir)) {
      const imports = [...readFileSync(path.join(dir, file), "utf8").matchAll(/from\s+"([^"]+)"/g)].map((m) => m[1]!);
      const local = imports.filter((s) => s.startsWith("."));
      expect(
        local.filter((s) => !s.startsWith("./") && !s.startsWith("../../sdk/") && s !== "../config.js"),
        file,
      ).toEqual([]);
    }
  });

  it("get_checkpoint gives every version the checkpoint rests on, however many pages they take", async () => {
    // A model's suggestion resting on more versions than a page of the API holds (100).
    const prisma = t.app.db.prisma;
    const workspaceDbId = Buffer.from(workspaceId, "base64").toString("utf8").split(":")[1]!;
    const { ownerId } = await prisma.workspace.findUniqueOrThrow({ where: { id: workspaceDbId } });
    const publication = await prisma.publication.create({ data: { ownerId, title: "Many sources", latestVersion: 130 } });
    const versions = [];
    for (let n = 1; n <= 130; n += 1) {
      versions.push(
        await prisma.publicationVersion.create({
          data: { publicationId: publication.id, version: n, content: `source ${n}`, contentHash: contentHash(`source ${n}`), asOf: new Date() },
        }),
      );
    }
    // The run whose model made the suggestion; settled first, so nothing else moves the checkpoint.
    const proposer = (await admit(t.as(aliceKey), { workspaceId, question: "Which sources?" })).run;
    await settled(t.as(aliceKey), proposer.id);
    const { checkpointRevision } = await prisma.workspace.findUniqueOrThrow({ where: { id: workspaceDbId } });
    const ids = versions.map((v) => v.id).reverse();
    await t.app.services.checkpoints.apply(
      { principalId: ownerId },
      workspaceDbId,
      checkpointRevision,
      { summary: "Resting on many sources", questions: [] },
      {
        origin: "MODEL_SUGGESTION",
        originRunId: Buffer.from(proposer.id, "base64").toString("utf8").split(":")[1]!,
        acceptedVersionIds: ids.slice(0, 105),
        sourceVersionIds: ids,
      },
    );

    const { checkpoint } = await alice.json("get_checkpoint", { workspaceId });
    const versionOf = (v: { version: number }) => v.version;
    expect(checkpoint.sourceDependencies.map(versionOf)).toEqual(Array.from({ length: 130 }, (_, i) => 130 - i));
    expect(checkpoint.acceptedPublicationVersions.map(versionOf)).toEqual(Array.from({ length: 105 }, (_, i) => 130 - i));
  });

  it("reports a refused key as a tool error, and a bad DOSSIER_URL at start-up", async () => {
    const stranger = await connectMcp({ DOSSIER_URL: t.server!.url, DOSSIER_API_KEY: "dsk_not-a-key" });
    try {
      const result = await stranger.call("list_workspaces");
      expect(result.isError).toBe(true);
      expect(result.content[0]!.text).toMatch(/^Dossier refused the request: .*key/i);
    } finally {
      await stranger.client.close();
    }
    await expect(connectMcp({ DOSSIER_URL: "not a url" })).rejects.toThrow();
  });
});
