// An access token reads, below the root, no publication that readMaterial would refuse it: one
// outside the history of every workspace it may READ. Workspace A's publication was built on a
// publication linked only to workspace B and on one of A's own; a run in A (admitted with the API
// key) has both as materials; a version of A's rests on a revoked version of B's. A token with
// READ on A sees the sources, materials and culprits within A's history only; the API key sees all.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateAccessTokenDocument, LinkToWorkspaceDocument, RevokePublicationVersionDocument, UpdateCheckpointDocument } from "../../sdk/generated/graphql.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SECRET = "B-PRIVATE-CONTENT only in workspace B";
const SECRET_TITLE = "B's private notes";
const OWN = "A's own notes";

const SOURCES = `query($id: ID!) {
  readMaterial(publicationId: $id, version: 1) {
    status
    publicationVersion { sources { content publication { title versions(first: 5) { edges { node { content } } } } } }
  }
}`;
const LATEST = `query($id: ID!) { node(id: $id) { ... on Publication { title latestVersion { content sources { content } } } } }`;
const MATERIALS = `query($id: ID!) {
  run(id: $id) {
    materials { position publicationVersion { content publication { title } } }
    materialUses(stage: SELECTED) { edges { node { stage publicationVersion { content publication { title } } } } }
  }
}`;
const CULPRIT = `query($id: ID!) {
  workspace(id: $id) {
    historyCatalog { entries { title versions { availability { status unavailableSource { content publication { title } } } } } }
  }
}`;

const CHECKPOINT = `query($id: ID!) {
  workspace(id: $id) {
    checkpoint {
      ... on Checkpoint {
        sourceDependencies(first: 10) { totalCount edges { node { content publication { title } } } }
        sections { section sources(first: 10) { totalCount countCapped edges { node { content } } } }
      }
    }
  }
}`;

const COUNTS = "sourceDependencies(first: 1) { totalCount countCapped } sections { sources(first: 1) { totalCount } }";

type Json = Record<string, any>;

describe.each(backends)("what an access token reads of publications through nested fields, on %s", (backend) => {
  let t: TestApp;
  let key: string;
  let token: string;
  const ids = { a: "", shared: "", run: "", fragile: "" };
  const statements: string[] = [];

  const ask = async (bearer: string, query: string, variables: Json) => {
    const response = await t.app.yoga.fetch(
      new Request("http://yoga/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
        body: JSON.stringify({ query, variables }),
      }),
    );
    const text = await response.text();
    return { text, body: JSON.parse(text) as { data: Json; errors?: unknown[] } };
  };

  beforeAll(async () => {
    t = await startTestApp(backend, {
      database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
      authRequired: true,
      runtime: { model: toolCallingModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-nested-reach-")) },
    });
    key = await t.createPrincipal("Team backend");
    const client = t.as(key);
    const a = await createWorkspace(client, "A");
    const b = await createWorkspace(client, "B");
    const link = async (workspaceId: string, targetId: string) =>
      expectType((await client.request(LinkToWorkspaceDocument, { input: { workspaceId, targetId } })).linkToWorkspace, "LinkToWorkspaceSuccess");
    const secretVersion = (await publish(client, { title: SECRET_TITLE, content: SECRET })).version;
    const ownVersion = (await publish(client, { title: "A's own", content: OWN })).version;
    const [secret, own] = [secretVersion.publication.id, ownVersion.publication.id];
    const doomed = (await publish(client, { title: "B's doomed notes", content: `${SECRET} (doomed)` })).version.publication.id;
    for (const publication of [secret, doomed]) await link(b.id, publication);
    await link(a.id, own);
    const sources = [
      { publicationId: secret, version: 1 },
      { publicationId: own, version: 1 },
    ];
    const shared = (await publish(client, { title: "A's findings", content: "shared", sources })).version.publication.id;
    const fragile = (await publish(client, { title: "A's fragile findings", content: "fragile", sources: [{ publicationId: doomed, version: 1 }] })).version
      .publication.id;
    for (const publication of [shared, fragile]) await link(a.id, publication);
    await client.request(RevokePublicationVersionDocument, { input: { publicationId: doomed, version: 1, reason: "withdrawn" } });
    const checkpoint = { workspaceId: a.id, expectedRevision: 0, summary: "Where A stands", questions: [], sources: [secretVersion.id, ownVersion.id] };
    expectType((await client.request(UpdateCheckpointDocument, { input: checkpoint })).updateCheckpoint, "UpdateCheckpointSuccess");
    const { run } = await admit(client, { workspaceId: a.id, question: "q", materials: sources });
    // Its ledger holds both materials once it has run.
    await settled(client, run.id);
    Object.assign(ids, { a: a.id, shared, run: run.id, fragile });
    token = expectType(
      (await client.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: a.id, operations: ["READ"] }] } })).createAccessToken,
      "CreateAccessTokenSuccess",
    ).token;
  });
  afterAll(async () => t?.close());

  it("lists a version's sources within the token's reach only, through readMaterial and node(id)", async () => {
    const viaRead = await ask(token, SOURCES, { id: ids.shared });
    expect(viaRead.body.errors).toBeUndefined();
    expect(viaRead.body.data.readMaterial.publicationVersion.sources).toEqual([
      { content: OWN, publication: { title: "A's own", versions: { edges: [{ node: { content: OWN } }] } } },
    ]);
    const viaNode = await ask(token, LATEST, { id: ids.shared });
    expect(viaNode.body.errors).toBeUndefined();
    expect(viaNode.body.data.node.latestVersion).toEqual({ content: "shared", sources: [{ content: OWN }] });
    for (const { text } of [viaRead, viaNode]) expect(text).not.toMatch(/B-PRIVATE-CONTENT|B's private notes/);
  });

  it("decides the reach of every source a request lists together in one statement", async () => {
    const from = statements.length;
    await ask(token, SOURCES, { id: ids.shared });
    // readMaterial's own check of its publication, then the sources of its version: both of them at once.
    expect(statements.slice(from).filter((sql) => /FROM publication p WHERE p\.id IN/.test(sql))).toHaveLength(2);
  });

  it("shows a run's materials and ledger within the token's reach only", async () => {
    const { text, body } = await ask(token, MATERIALS, { id: ids.run });
    expect(body.errors).toBeUndefined();
    // Numbered among the materials shown: position 0, as if the one left out had never been admitted.
    expect(body.data.run.materials).toEqual([{ position: 0, publicationVersion: { content: OWN, publication: { title: "A's own" } } }]);
    const ledger = body.data.run.materialUses.edges.map((edge: Json) => edge.node.publicationVersion);
    expect(ledger).toHaveLength(2);
    expect(ledger.filter((version: Json | null) => version === null)).toHaveLength(1);
    expect(text).not.toMatch(/B-PRIVATE-CONTENT|B's private notes/);
  });

  it("names no culprit outside the token's reach when a version of the workspace's history is unavailable", async () => {
    const { text, body } = await ask(token, CULPRIT, { id: ids.a });
    expect(body.errors).toBeUndefined();
    const fragile = body.data.workspace.historyCatalog.entries.find((entry: Json) => entry.title === "A's fragile findings");
    expect(fragile.versions).toEqual([{ availability: { status: "UNAVAILABLE", unavailableSource: null } }]);
    expect(text).not.toContain("B-PRIVATE-CONTENT");
  });

  it("lists the sources a workspace's checkpoint rests on within the token's reach only", async () => {
    const { text, body } = await ask(token, CHECKPOINT, { id: ids.a });
    expect(body.errors).toBeUndefined();
    const { sourceDependencies, sections } = body.data.workspace.checkpoint;
    expect(sourceDependencies.edges).toEqual([{ node: { content: OWN, publication: { title: "A's own" } } }]);
    // The counts tell of no source left out.
    expect(sourceDependencies.totalCount).toBe(1);
    expect(sections).toEqual([{ section: "SUMMARY", sources: { totalCount: 1, countCapped: false, edges: [{ node: { content: OWN } }] } }]);
    expect(text).not.toMatch(/B-PRIVATE-CONTENT|B's private notes/);
  });

  it("counts the sources of the lists of a request within the token's reach with one decision for each list at most", async () => {
    const from = statements.length;
    const { body } = await ask(token, `query($id: ID!) { workspace(id: $id) { checkpoint { ... on Checkpoint { ${COUNTS} } } } }`, { id: ids.a });
    expect(body.errors).toBeUndefined();
    expect(body.data.workspace.checkpoint).toEqual({ sourceDependencies: { totalCount: 1, countCapped: false }, sections: [{ sources: { totalCount: 1 } }] });
    // At most one decision for each list (two when they resolve apart), not one for each of their four sources.
    const decisions = statements.slice(from).filter((sql) => /FROM publication p WHERE p\.id IN/.test(sql)).length;
    expect(decisions).toBeGreaterThanOrEqual(1);
    expect(decisions).toBeLessThanOrEqual(2);
  });

  it("shows an API key every one of its publications along the same paths", async () => {
    const sources = (await ask(key, SOURCES, { id: ids.shared })).body.data.readMaterial.publicationVersion.sources;
    expect(sources.map((source: Json) => source.publication.title)).toEqual([SECRET_TITLE, "A's own"]);
    const latest = (await ask(key, LATEST, { id: ids.shared })).body.data.node.latestVersion.sources;
    expect(latest).toEqual([{ content: SECRET }, { content: OWN }]);
    const run = (await ask(key, MATERIALS, { id: ids.run })).body.data.run;
    expect(run.materials.map((material: Json) => [material.position, material.publicationVersion.content])).toEqual([
      [0, SECRET],
      [1, OWN],
    ]);
    expect(run.materialUses.edges.every((edge: Json) => edge.node.publicationVersion !== null)).toBe(true);
    const entries = (await ask(key, CULPRIT, { id: ids.a })).body.data.workspace.historyCatalog.entries;
    const fragile = entries.find((entry: Json) => entry.title === "A's fragile findings");
    const checkpoint = (await ask(key, CHECKPOINT, { id: ids.a })).body.data.workspace.checkpoint;
    expect(checkpoint.sourceDependencies.edges.map((edge: Json) => edge.node.content)).toEqual([SECRET, OWN]);
    expect([checkpoint.sourceDependencies.totalCount, checkpoint.sections[0].sources.totalCount]).toEqual([2, 2]);
    expect(fragile.versions[0].availability.unavailableSource).toEqual({ content: `${SECRET} (doomed)`, publication: { title: "B's doomed notes" } });
  });
});
