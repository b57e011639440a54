// What node(id) shows an access token with READ on a workspace: everything a UI shows of it —
// its goal versions, checkpoint revisions and links, the publications (and versions) and
// artifacts linked to it, and the traces, spans, span events, material uses and messages of its
// runs. The same kinds of things of the principal's other workspace, and things linked nowhere,
// read as null, as does everything to a token granted only SUBSCRIBE. searchHistory and
// readMaterial reach the granted workspace's history only, evidence its runs' messages.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CreateAccessTokenDocument,
  EvidenceDocument,
  LinkToWorkspaceDocument,
  NodeDocument,
  ReadMaterialDocument,
  SearchHistoryDocument,
  UpdateCheckpointDocument,
  WorkspaceDocument,
} from "../../sdk/generated/graphql.js";
import { encodeGlobalId, idOfType } from "../../src/graphql/global-id.js";
import { resultEvidenceId } from "../../src/domain/research/evidence.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { admit, createArtifact, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe("node(id) of what a granted workspace holds and links, with an access token", () => {
  let t: TestApp;
  let key: string;
  /** Per workspace: the ids of one thing of each kind. */
  const things: Record<"granted" | "other", Record<string, string>> = { granted: {}, other: {} };
  let unlinked: Record<string, string>;
  /** Per workspace: the evidence id of its run's tool result. */
  const evidence: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp("pglite", {
      authRequired: true,
      runtime: {
        // Each run adds a task first (a tool call whose result is evidence), then answers.
        model: new ScriptedModel({
          name: "answers",
          steps: (request) =>
            request.messages.at(-1)?.role === "tool"
              ? { content: "A short answer worth publishing." }
              : { toolCalls: [{ name: "task_list", arguments: { action: "add", title: "Check the sources" } }] },
        }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-token-nodes-")),
      },
    });
    key = await t.createPrincipal("Team backend");
    const client = t.as(key);
    const prisma = t.app.db.prisma;
    for (const side of ["granted", "other"] as const) {
      const workspace = await createWorkspace(client, `${side} goal`);
      const material = (await publish(client, { title: `${side} material`, content: `${side} material text` })).version;
      const artifact = await createArtifact(client);
      for (const targetId of [material.publication.id, artifact.id]) {
        expectType(
          (await client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId } })).linkToWorkspace,
          "LinkToWorkspaceSuccess",
        );
      }
      const checkpoint = await client.request(UpdateCheckpointDocument, {
        input: { workspaceId: workspace.id, expectedRevision: 0, summary: `${side} summary`, questions: [] },
      });
      expectType(checkpoint.updateCheckpoint, "UpdateCheckpointSuccess");
      const { run } = await admit(client, {
        workspaceId: workspace.id,
        question: `${side} question`,
        materials: [{ publicationId: material.publication.id, version: 1 }],
      });
      expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
      const runId = idOfType(run.id, "Run")!;
      const workspaceId = idOfType(workspace.id, "Workspace")!;
      const span = await prisma.span.findFirstOrThrow({ where: { trace: { runId } }, orderBy: { startedAt: "asc" } });
      const rows = {
        GoalVersion: (await prisma.goalVersion.findFirstOrThrow({ where: { workspaceId } })).id,
        CheckpointVersion: (await prisma.checkpointVersion.findFirstOrThrow({ where: { workspaceId } })).id,
        WorkspaceLink: (await prisma.workspaceLink.findFirstOrThrow({ where: { workspaceId, targetKind: "ARTIFACT" } })).id,
        Publication: idOfType(material.publication.id, "Publication")!,
        PublicationVersion: idOfType(material.id, "PublicationVersion")!,
        Artifact: idOfType(artifact.id, "Artifact")!,
        Trace: (await prisma.trace.findUniqueOrThrow({ where: { runId } })).id,
        Span: span.id,
        SpanEvent: (await prisma.spanEvent.findFirstOrThrow({ where: { span: { trace: { runId } } } })).id,
        MaterialUse: (await prisma.materialUse.findFirstOrThrow({ where: { runId } })).id,
        Message: (await prisma.message.findFirstOrThrow({ where: { runId } })).id,
        RunInput: (await prisma.runInput.create({ data: { runId, text: `${side} steering`, status: "RELEASED", releasedAt: new Date() } })).id,
      };
      things[side] = Object.fromEntries(Object.entries(rows).map(([typename, id]) => [typename, encodeGlobalId(typename, id)]));
      things[side].workspace = workspace.id;
      evidence[side] = resultEvidenceId((await prisma.message.findFirstOrThrow({ where: { runId, role: "TOOL" } })).id);
    }
    // The answers were published and linked to each run's workspace: those count as linked too.
    const answer = await prisma.publicationVersion.findFirstOrThrow({
      where: { originRun: { workspaceId: idOfType(things.granted.workspace!, "Workspace")! } },
    });
    things.granted.AnswerVersion = encodeGlobalId("PublicationVersion", answer.id);
    unlinked = {
      Publication: (await publish(client, { title: "linked nowhere", content: "x" })).version.publication.id,
      Artifact: (await createArtifact(client)).id,
    };
  });
  afterAll(async () => t?.close());

  const mint = async (operations: string[]) =>
    expectType(
      (await t.as(key).request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: things.granted.workspace!, operations } as never] } }))
        .createAccessToken,
      "CreateAccessTokenSuccess",
    ).token;
  /** The typenames whose node(id) answered, of these ids. */
  const answered = async (bearer: string, ids: Record<string, string>) => {
    const shown: string[] = [];
    for (const [name, id] of Object.entries(ids)) {
      if (name === "workspace") continue;
      const node = (await t.as(bearer).request(NodeDocument, { id })).node;
      if (node) {
        expect(node.id).toBe(id);
        shown.push(name);
      }
    }
    return shown.sort();
  };

  it("answers the granted workspace's own and linked things and its runs' traces, and null for the other workspace's", async () => {
    const kinds = Object.keys(things.granted)
      .filter((name) => name !== "workspace")
      .sort();
    expect(kinds).toHaveLength(13);
    // The key sees all of them, so each id names something.
    expect(await answered(key, things.granted)).toEqual(kinds);
    expect(await answered(key, { ...things.other, ...unlinked })).toEqual(
      Object.keys({ ...things.other, ...unlinked })
        .filter((n) => n !== "workspace")
        .sort(),
    );

    const reader = await mint(["READ", "SUBSCRIBE"]);
    expect((await t.as(reader).request(WorkspaceDocument, { id: things.granted.workspace! })).workspace?.title).toBe("Batteries");
    expect(await answered(reader, things.granted)).toEqual(kinds);
    expect(await answered(reader, things.other)).toEqual([]);
    expect(await answered(reader, unlinked)).toEqual([]);

    // What a UI reads of them comes back whole.
    const response = await t.app.yoga.fetch(
      new Request("http://dossier.test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${reader}` },
        body: JSON.stringify({
          query: `query($trace: ID!, $publication: ID!, $checkpoint: ID!, $artifact: ID!) {
            trace: node(id: $trace) { ... on Trace { usage { output } spans { edges { node { kind events { edges { node { kind preview } } } } } } } }
            publication: node(id: $publication) { ... on Publication { title latestVersion { version content } } }
            checkpoint: node(id: $checkpoint) { ... on Checkpoint { summary } }
            artifact: node(id: $artifact) { ... on Artifact { name mimeType } } }`,
          variables: {
            trace: things.granted.Trace,
            publication: things.granted.Publication,
            checkpoint: things.granted.CheckpointVersion,
            artifact: things.granted.Artifact,
          },
        }),
      }),
    );
    const read = (await response.json()) as { data: Record<string, any>; errors?: unknown[] };
    expect(read.errors).toBeUndefined();
    expect(read.data.trace.spans.edges.length).toBeGreaterThan(0);
    expect(read.data.publication).toEqual({ title: "granted material", latestVersion: { version: 1, content: "granted material text" } });
    expect(read.data.checkpoint).toEqual({ summary: "granted summary" });
    expect(read.data.artifact).toEqual({ name: "report.html", mimeType: "text/html" });

    // The evidence its runs' model requests name, and none of the other workspace's.
    const evidenceOf = async (bearer: string, id: string) => (await t.as(bearer).request(EvidenceDocument, { id })).evidence?.content ?? null;
    expect(await evidenceOf(key, evidence.other!)).toContain("Check the sources");
    expect(await evidenceOf(reader, evidence.granted!)).toContain("Check the sources");
    expect(await evidenceOf(reader, evidence.other!)).toBeNull();

    // Without READ, none of it.
    const watcher = await mint(["SUBSCRIBE"]);
    expect(await answered(watcher, things.granted)).toEqual([]);
  });

  it("searches the granted workspace's history and reads its materials; another workspace is not found, its materials unavailable", async () => {
    const reader = await mint(["READ"]);
    const search = (bearer: string, workspaceId: string) =>
      t
        .as(bearer)
        .request(SearchHistoryDocument, { workspaceId, query: "material" })
        .then((d) => d.searchHistory);
    const found = expectType(await search(reader, things.granted.workspace!), "SearchHistorySuccess");
    expect(found.hits.map((hit) => hit.title)).toEqual(["granted material"]);
    expect((await search(reader, things.other.workspace!)).__typename).toBe("NotFoundError");
    expect((await search(await mint(["SUBSCRIBE"]), things.granted.workspace!)).__typename).toBe("NotFoundError");

    const read = (bearer: string, publicationId: string) =>
      t
        .as(bearer)
        .request(ReadMaterialDocument, { publicationId, version: 1 })
        .then((d) => d.readMaterial);
    expect(await read(reader, things.granted.Publication!)).toMatchObject({ status: "AVAILABLE", publicationVersion: { content: "granted material text" } });
    // Outside the history it reads exactly as a publication that does not exist.
    const missing = await read(key, encodeGlobalId("Publication", "no-such-publication"));
    expect(missing).toMatchObject({ status: "UNAVAILABLE", publicationVersion: null });
    expect(await read(reader, things.other.Publication!)).toEqual(missing);
    expect(await read(reader, unlinked.Publication!)).toEqual(missing);
  });
});
