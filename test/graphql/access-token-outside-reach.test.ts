// An access token learns nothing of what lies outside its reach through the fields that lead from
// what it may read: the runs that consumed a version (and their model requests), the ids a ledger
// or a catalog names, and the words that say why a version is unavailable. Workspace A's
// publication was built on one of B's (linked only to B) and on one of A's own; A's own was
// consumed by a run of A, by a run linked to A, and by a run of B. A token with READ on A sees
// the first two and nothing of B's; the API key sees everything.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateAccessTokenDocument, LinkToWorkspaceDocument, RevokePublicationVersionDocument, UpdateCheckpointDocument } from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SECRET = "B-PRIVATE-CONTENT only in workspace B";
const SECRET_TITLE = "B's private notes";
const HOLD = "legal hold: merger talks with Acme";
const OWN = "A's own notes";

const CONSUMERS = `query($id: ID!) {
  readMaterial(publicationId: $id, version: 1) {
    publicationVersion { consumedBy(first: 10) { totalCount edges { node { id run { id } requestSpan { id name request } } } } }
  }
}`;
const IDS = `query($a: ID!, $run: ID!) {
  workspace(id: $a) { historyCatalog { entries { title versions { sources { publicationId version } } } } }
  run(id: $run) { materialUses(first: 20) { edges { node { stage publicationId version contentHash reason } } } }
}`;
const REASONS = `query($a: ID!, $shared: ID!, $fragile: ID!) {
  shared: readMaterial(publicationId: $shared, version: 1) { status reason }
  fragile: readMaterial(publicationId: $fragile, version: 1) { status reason }
  workspace(id: $a) {
    checkpoint { ... on UnavailableCheckpoint { reason } }
    historyCatalog { entries { title versions { availability { status reason } } } }
  }
}`;

type Json = Record<string, any>;

describe.each(backends)("what an access token learns of what lies outside its reach, on %s", (backend) => {
  let t: TestApp;
  let key: string;
  let token: string;
  const ids = { a: "", own: "", secret: "", shared: "", fragile: "", runA: "", linked: "", runB: "" };

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
      authRequired: true,
      runtime: { model: toolCallingModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-outside-reach-")) },
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
    await client.request(RevokePublicationVersionDocument, { input: { publicationId: doomed, version: 1, reason: "withdrawn for B's audit" } });
    const checkpoint = { workspaceId: a.id, expectedRevision: 0, summary: "Where A stands", questions: [], sources: [secretVersion.id, ownVersion.id] };
    expectType((await client.request(UpdateCheckpointDocument, { input: checkpoint })).updateCheckpoint, "UpdateCheckpointSuccess");
    // Three runs read A's own notes: one in A, one in no workspace but linked to A, one in B.
    const reading = callTools({ name: "read_material", arguments: { publicationId: own, version: 1 } });
    const runA = (await admit(client, { workspaceId: a.id, question: reading, materials: sources })).run;
    const linked = (await admit(client, { question: reading })).run;
    const runB = (await admit(client, { workspaceId: b.id, question: reading })).run;
    for (const run of [runA, linked, runB]) await settled(client, run.id);
    await link(a.id, linked.id);
    Object.assign(ids, { a: a.id, own, secret, shared, fragile, runA: runA.id, linked: linked.id, runB: runB.id });
    token = expectType(
      (await client.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: a.id, operations: ["READ"] }] } })).createAccessToken,
      "CreateAccessTokenSuccess",
    ).token;
  });
  afterAll(async () => t?.close());

  it("lists as a version's consumers only the runs the token may read, with their model requests, and counts only those", async () => {
    const { text, body } = await ask(token, CONSUMERS, { id: ids.own });
    expect(body.errors).toBeUndefined();
    const consumedBy = body.data.readMaterial.publicationVersion.consumedBy;
    const runs = consumedBy.edges.map((edge: Json) => edge.node.run.id);
    expect(new Set(runs)).toEqual(new Set([ids.runA, ids.linked]));
    expect(consumedBy.totalCount).toBe(runs.length);
    expect(consumedBy.edges.every((edge: Json) => edge.node.requestSpan?.name !== undefined && edge.node.requestSpan !== null)).toBe(true);
    expect(text).not.toContain(ids.runB);

    const all = (await ask(key, CONSUMERS, { id: ids.own })).body.data.readMaterial.publicationVersion.consumedBy;
    const byRun = all.edges.filter((edge: Json) => edge.node.run.id === ids.runB);
    expect(byRun.length).toBeGreaterThan(0);
    expect(all.totalCount).toBe(runs.length + byRun.length);
    // Nor does node(id) show the token B's run's ledger entry or its model request.
    const { node: use } = byRun[0];
    const nodes = await ask(token, `query($use: ID!, $span: ID!) { use: node(id: $use) { id } span: node(id: $span) { id } }`, {
      use: use.id,
      span: use.requestSpan.id,
    });
    expect(nodes.body.data).toEqual({ use: null, span: null });
  });

  it("names no publication outside the token's reach in a ledger or a catalog, by id or version", async () => {
    const { text, body } = await ask(token, IDS, { a: ids.a, run: ids.runA });
    expect(body.errors).toBeUndefined();
    const shared = body.data.workspace.historyCatalog.entries.find((entry: Json) => entry.title === "A's findings");
    expect(shared.versions[0].sources).toEqual([{ publicationId: ids.own, version: 1 }]);
    const fragile = body.data.workspace.historyCatalog.entries.find((entry: Json) => entry.title === "A's fragile findings");
    expect(fragile.versions[0].sources).toEqual([]);
    const uses: Json[] = body.data.run.materialUses.edges.map((edge: Json) => edge.node);
    const unnamed = uses.filter((use) => use.publicationId === null);
    // B's notes were SELECTED at admission: the entry is there, naming nothing.
    expect(unnamed).toEqual([{ stage: "SELECTED", publicationId: null, version: null, contentHash: null, reason: null }]);
    expect(uses.filter((use) => use.publicationId === ids.own).every((use) => use.version === 1)).toBe(true);
    expect(text).not.toContain(ids.secret);

    const keyed = (await ask(key, IDS, { a: ids.a, run: ids.runA })).body.data;
    const keyShared = keyed.workspace.historyCatalog.entries.find((entry: Json) => entry.title === "A's findings");
    expect(keyShared.versions[0].sources).toEqual([
      { publicationId: ids.secret, version: 1 },
      { publicationId: ids.own, version: 1 },
    ]);
    expect(keyed.run.materialUses.edges.every((edge: Json) => edge.node.publicationId !== null)).toBe(true);
  });

  it("says why a version or the checkpoint is unavailable without the title or revocation reason of a version outside the token's reach", async () => {
    await t.as(key).request(RevokePublicationVersionDocument, { input: { publicationId: ids.secret, version: 1, reason: HOLD } });
    const variables = { a: ids.a, shared: ids.shared, fragile: ids.fragile };
    const { text, body } = await ask(token, REASONS, variables);
    expect(body.errors).toBeUndefined();
    const unnamed = "it rests on a version outside this token's reach, which was revoked";
    expect(body.data.shared).toEqual({ status: "UNAVAILABLE", reason: unnamed });
    expect(body.data.fragile).toEqual({ status: "UNAVAILABLE", reason: unnamed });
    expect(body.data.workspace.checkpoint).toEqual({ reason: "a version outside this token's reach was revoked" });
    const entries: Json[] = body.data.workspace.historyCatalog.entries;
    const reasonOf = (title: string) => entries.find((entry) => entry.title === title)!.versions[0].availability;
    expect(reasonOf("A's findings")).toEqual({ status: "UNAVAILABLE", reason: unnamed });
    expect(reasonOf("A's fragile findings")).toEqual({ status: "UNAVAILABLE", reason: unnamed });
    expect(text).not.toMatch(/B's private notes|B's doomed notes|legal hold|withdrawn for B/);

    // The API key is told which version and why.
    const keyed = (await ask(key, REASONS, variables)).body.data;
    expect(keyed.shared.reason).toBe(`it depends on "${SECRET_TITLE}" version 1, which was revoked: ${HOLD}`);
    expect(keyed.fragile.reason).toBe(`it depends on "B's doomed notes" version 1, which was revoked: withdrawn for B's audit`);
    expect(keyed.workspace.checkpoint.reason).toBe(`"${SECRET_TITLE}" version 1 was revoked: ${HOLD}`);
  });
});
