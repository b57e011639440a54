// An access token's runs read only what its grants let it read. A token with READ and ADMIT on a
// workspace admits runs with materials of that workspace's history only: a publication of its
// principal's outside that history is refused exactly as one that does not exist (its content is
// never returned, and the answer tells nothing of whether it exists). read_material in a run the
// token admitted reads the workspace's history and nothing else of the principal's, whether the
// run was admitted with materials or without; a run admitted with the API key reads all of them.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdmitRunDocument, CreateAccessTokenDocument, LinkToWorkspaceDocument } from "../../sdk/generated/graphql.js";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SECRET = "Another end user's private notes: B-PRIVATE-CONTENT";
const SHARED = "The workspace's own material: shared findings";
const MISSING_ANSWER = "there is no version 1 of that publication that you may read";

const ADMIT = `mutation($input: AdmitRunInput!) {
  admitRun(input: $input) {
    __typename
    ... on AdmitRunSuccess { run { id materials { publicationVersion { content publication { title } } } } }
    ... on Error { message }
  }
}`;

const read = (publicationId: string) => ({ name: "read_material", arguments: { publicationId, version: 1 } });

describe.each(backends)("materials of runs an access token admits, on %s", (backend) => {
  let t: TestApp;
  let key: string;
  let token: string;
  const ids = { workspace: "", secret: "", shared: "" };

  /** The admitRun payload a bearer gets, and the whole response's text. */
  const admitRaw = async (bearer: string, input: Record<string, unknown>) => {
    const response = await t.app.yoga.fetch(
      new Request("http://yoga/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
        body: JSON.stringify({ query: ADMIT, variables: { input } }),
      }),
    );
    const text = await response.text();
    return { text, payload: (JSON.parse(text) as { data: { admitRun: Record<string, unknown> } }).data.admitRun };
  };
  const runCount = () => t.app.db.prisma.run.count();

  beforeAll(async () => {
    t = await startTestApp(backend, {
      authRequired: true,
      runtime: { model: toolCallingModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-token-materials-")) },
    });
    key = await t.createPrincipal("Team backend");
    const client = t.as(key);
    const workspace = await createWorkspace(client, "End user A's research");
    const secret = (await publish(client, { title: "End user B's notes", content: SECRET })).version.publication.id;
    const shared = (await publish(client, { title: "Shared findings", content: SHARED })).version.publication.id;
    expectType(
      (await client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: shared } })).linkToWorkspace,
      "LinkToWorkspaceSuccess",
    );
    Object.assign(ids, { workspace: workspace.id, secret, shared });
    token = expectType(
      (await client.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: workspace.id, operations: ["READ", "ADMIT"] }] } })).createAccessToken,
      "CreateAccessTokenSuccess",
    ).token;
  });
  afterAll(async () => t?.close());

  it("refuses a material outside the workspace's history as one that does not exist, and never returns its content", async () => {
    const before = await runCount();
    const outside = await admitRaw(token, { workspaceId: ids.workspace, question: "q", materials: [{ publicationId: ids.secret, version: 1 }] });
    const missing = await admitRaw(token, {
      workspaceId: ids.workspace,
      question: "q",
      materials: [{ publicationId: encodeGlobalId("Publication", "no-such-publication"), version: 1 }],
    });
    expect(outside.payload).toEqual({ __typename: "NotFoundError", message: "Publication version not found." });
    expect(outside.payload).toEqual(missing.payload);
    expect(outside.text).not.toContain("B-PRIVATE-CONTENT");
    expect(outside.text).not.toContain("End user B's notes");
    // Named with one of the workspace's own, it is refused all the same.
    const mixed = await admitRaw(token, {
      workspaceId: ids.workspace,
      question: "q",
      materials: [
        { publicationId: ids.shared, version: 1 },
        { publicationId: ids.secret, version: 1 },
      ],
    });
    expect(mixed.payload).toEqual(missing.payload);
    expect(await runCount()).toBe(before);
  });

  it("admits a material of the workspace's history with its content; the API key still admits any of its publications", async () => {
    const inside = await admitRaw(token, { workspaceId: ids.workspace, question: "q", materials: [{ publicationId: ids.shared, version: 1 }] });
    expect(inside.payload).toMatchObject({ __typename: "AdmitRunSuccess", run: { materials: [{ publicationVersion: { content: SHARED } }] } });
    const byKey = await admitRaw(key, { workspaceId: ids.workspace, question: "q", materials: [{ publicationId: ids.secret, version: 1 }] });
    expect(byKey.payload).toMatchObject({ __typename: "AdmitRunSuccess", run: { materials: [{ publicationVersion: { content: SECRET } }] } });
  });

  it("read_material in a run the token admitted refuses what lies outside the workspace's history and reads what lies in it", async () => {
    const question = callTools(read(ids.secret), read(ids.shared));
    // Without materials (the one-statement admission) and with one (the transactional admission).
    const admitted = async (materials: { publicationId: string; version: number }[]) =>
      expectType((await t.as(token).request(AdmitRunDocument, { input: { workspaceId: ids.workspace, question, materials } })).admitRun, "AdmitRunSuccess").run;
    const runs = [await admitted([]), await admitted([{ publicationId: ids.shared, version: 1 }])];
    for (const run of runs) {
      const done = await settled(t.as(key), run.id);
      expect(done.status).toBe("SUCCEEDED");
      const [secretPart, sharedPart] = done.answer!.split("\n---\n");
      expect(secretPart).toBe(
        `UNAVAILABLE: version 1 of ${ids.secret} cannot be used: ${MISSING_ANSWER}. Continue with other evidence and state this gap in your answer.`,
      );
      expect(done.answer).not.toContain("B-PRIVATE-CONTENT");
      expect(sharedPart).toContain(SHARED);
    }
    // The API key's run reads every publication of its principal.
    const { run } = await admit(t.as(key), { workspaceId: ids.workspace, question });
    const done = await settled(t.as(key), run.id);
    expect(done.answer).toContain(SECRET);
    expect(done.answer).toContain(SHARED);
  });
});
