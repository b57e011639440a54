// The words a run recorded, or was told, about a version that broke eligibility name no version
// outside the reach of the access token reading them, or of the access token that admitted the
// run. Workspace A's findings were built on B's private notes (linked only to B), which were
// then revoked, and A's checkpoint rests on them. A run the API key admitted in A read the
// findings: its ledger says why it could not, naming B's notes; a token with READ on A is told
// the same without their title or why they were revoked, a token that also reads B, and the key,
// the whole reason. A run a token with READ and ADMIT on A admitted is told nothing of B's notes
// at all: not in read_material's answer, nor in its catalog or its checkpoint.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateAccessTokenDocument, LinkToWorkspaceDocument, RevokePublicationVersionDocument, UpdateCheckpointDocument } from "../../sdk/generated/graphql.js";
import { decodeGlobalId } from "../../src/domain/global-id.js";
import type { ChatMessage } from "../../src/runtime/ports/model.js";
import { backends } from "../support/databases.js";
import { admit, admitUnread, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { asks } from "../support/requests.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SECRET_TITLE = "B's private notes";
const HOLD = "legal hold: merger talks with Acme";
const NAMED = `it depends on "${SECRET_TITLE}" version 1, which was revoked: ${HOLD}`;
const UNNAMED = "it rests on a version outside this token's reach, which was revoked";
const LEAK = /B's private notes|legal hold|Acme/;

const LEDGER = `query($run: ID!) {
  run(id: $run) { materialUses(stage: UNAVAILABLE, first: 10) { edges { node { publicationId version reason } } } }
}`;

const UPDATE = `mutation($input: UpdateCheckpointInput!) {
  updateCheckpoint(input: $input) { __typename ... on IneligibleSourceError { eligibilityReason } }
}`;

type Json = Record<string, any>;
const text = (m: ChatMessage): string => (typeof m.content === "string" ? m.content : JSON.stringify(m.content));

describe.each(backends)("what a ledger's reasons and a token's run say of versions outside a token's reach, on %s", (backend) => {
  let t: TestApp;
  let key: string;
  const model = toolCallingModel();
  const ids = { a: "", findings: "", findingsVersion: "", keyRun: "" };
  const tokens = { readA: "", readAB: "", admitA: "" };

  const ask = async (bearer: string, query: string, variables: Json) => {
    const response = await t.app.yoga.fetch(
      new Request("http://yoga/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
        body: JSON.stringify({ query, variables }),
      }),
    );
    const body = await response.text();
    return { text: body, body: JSON.parse(body) as { data: Json; errors?: unknown[] } };
  };
  const unavailable = async (bearer: string, run: string) => {
    const { text: raw, body } = await ask(bearer, LEDGER, { run });
    expect(body.errors).toBeUndefined();
    return { raw, entries: body.data.run.materialUses.edges.map((edge: Json) => edge.node) };
  };

  beforeAll(async () => {
    t = await startTestApp(backend, {
      authRequired: true,
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-ledger-reasons-")) },
    });
    key = await t.createPrincipal("Team backend");
    const client = t.as(key);
    const a = await createWorkspace(client, "A");
    const b = await createWorkspace(client, "B");
    const link = async (workspaceId: string, targetId: string) =>
      expectType((await client.request(LinkToWorkspaceDocument, { input: { workspaceId, targetId } })).linkToWorkspace, "LinkToWorkspaceSuccess");
    const secret = (await publish(client, { title: SECRET_TITLE, content: "B-PRIVATE-CONTENT" })).version;
    await link(b.id, secret.publication.id);
    const findingsVersion = (
      await publish(client, { title: "A's findings", content: "findings", sources: [{ publicationId: secret.publication.id, version: 1 }] })
    ).version;
    const findings = findingsVersion.publication.id;
    await link(a.id, findings);
    const checkpoint = { workspaceId: a.id, expectedRevision: 0, summary: "Where A stands", questions: [], sources: [secret.id] };
    expectType((await client.request(UpdateCheckpointDocument, { input: checkpoint })).updateCheckpoint, "UpdateCheckpointSuccess");
    await client.request(RevokePublicationVersionDocument, { input: { publicationId: secret.publication.id, version: 1, reason: HOLD } });
    const keyRun = (
      await admit(client, { workspaceId: a.id, question: callTools({ name: "read_material", arguments: { publicationId: findings, version: 1 } }) })
    ).run;
    await settled(client, keyRun.id);
    Object.assign(ids, { a: a.id, findings, findingsVersion: findingsVersion.id, keyRun: keyRun.id });
    const mint = async (grants: { resourceId: string; operations: ("READ" | "ADMIT")[] }[]) =>
      expectType((await client.request(CreateAccessTokenDocument, { input: { grants } })).createAccessToken, "CreateAccessTokenSuccess").token;
    tokens.readA = await mint([{ resourceId: a.id, operations: ["READ"] }]);
    tokens.readAB = await mint([
      { resourceId: a.id, operations: ["READ"] },
      { resourceId: b.id, operations: ["READ"] },
    ]);
    tokens.admitA = await mint([{ resourceId: a.id, operations: ["READ", "ADMIT"] }]);
  });
  afterAll(async () => t?.close());

  it("tells a token why a ledger entry of its reach was unavailable without naming the version outside its reach; a token reaching it and the key are told whole", async () => {
    const { raw, entries } = await unavailable(tokens.readA, ids.keyRun);
    expect(entries).toEqual([{ publicationId: ids.findings, version: 1, reason: UNNAMED }]);
    expect(raw).not.toMatch(LEAK);
    expect((await unavailable(tokens.readAB, ids.keyRun)).entries).toEqual([{ publicationId: ids.findings, version: 1, reason: NAMED }]);
    expect((await unavailable(key, ids.keyRun)).entries).toEqual([{ publicationId: ids.findings, version: 1, reason: NAMED }]);
    // An entry recorded before the version it names was kept with it: a token is told it unnamed, whatever it reaches.
    const runId = decodeGlobalId(ids.keyRun)!.id;
    await t.app.db.prisma.materialUse.updateMany({ where: { runId, stage: "UNAVAILABLE" }, data: { culpritPublicationId: null } });
    expect((await unavailable(tokens.readAB, ids.keyRun)).entries).toEqual([{ publicationId: ids.findings, version: 1, reason: UNNAMED }]);
    expect((await unavailable(key, ids.keyRun)).entries).toEqual([{ publicationId: ids.findings, version: 1, reason: NAMED }]);
  });

  it("answers a token's checkpoint update ForbiddenError, so no IneligibleSourceError names a version to it", async () => {
    const input = { workspaceId: ids.a, expectedRevision: 1, summary: "Rebuilt", questions: [], sources: [ids.findingsVersion] };
    for (const bearer of [tokens.readA, tokens.admitA]) {
      const { text: raw, body } = await ask(bearer, UPDATE, { input });
      expect(body.data.updateCheckpoint.__typename).toBe("ForbiddenError");
      expect(raw).not.toMatch(LEAK);
    }
    const keyed = (await ask(key, UPDATE, { input })).body.data.updateCheckpoint;
    expect(keyed).toEqual({ __typename: "IneligibleSourceError", eligibilityReason: NAMED });
  });

  it("tells a run a token admitted nothing of a version outside the token's reach: not in read_material's answer, its catalog or its checkpoint", async () => {
    const question = callTools(
      { name: "read_material", arguments: { publicationId: ids.findings, version: 1 }, id: "token-read" },
      { name: "list_history", id: "token-list" },
    );
    const { run } = await admitUnread(t.as(tokens.admitA), { workspaceId: ids.a, question });
    const done = await settled(t.as(key), run.id);
    expect(done.status).toBe("SUCCEEDED");
    const told = model.requests.filter((request) => request.messages.some((m) => asks(m, question))).flatMap((request) => request.messages.map(text));
    expect(told.length).toBeGreaterThan(0);
    const all = told.join("\n");
    expect(all).toContain(`"A's findings"`);
    expect(all).toContain(`(UNAVAILABLE: ${UNNAMED})`);
    expect(all).toContain("Checkpoint revision 1 is UNAVAILABLE: a version outside this token's reach was revoked.");
    expect(all).not.toMatch(LEAK);
    expect(done.answer).toContain(`cannot be used: ${UNNAMED}.`);
    expect(done.answer).not.toMatch(LEAK);
    // The ledger keeps what the run was told, to the key as to the token.
    expect((await unavailable(key, run.id)).entries).toEqual([{ publicationId: ids.findings, version: 1, reason: UNNAMED }]);
  });
});
