// A token with READ and ADMIT on a workspace admits runs there: its admitRun answer shows what
// node(id) and run(id) show it — the workspace's checkpoint included — and a request asking for
// what it may not read (the messages of the new conversation the run opens) is refused before the
// run is admitted, never answered null after it was.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdmitRunDocument, CreateAccessTokenDocument, UpdateCheckpointDocument } from "../../sdk/generated/graphql.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { rawRequest } from "../support/raw-request.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const RUNS = `{ runs(first: 50) { edges { node { id } } } }`;
const admitAsking = (selection: string) => `mutation($w: ID!) { admitRun(input: { workspaceId: $w, question: "What changed?" }) {
  __typename ... on AdmitRunSuccess { run { id ${selection} } } ... on Error { message } } }`;

describe("a workspace token's admitRun answer", () => {
  let t: TestApp;
  let ownerKey: string;
  let workspaceId: string;
  let token: string;
  const runCount = async () => (await rawRequest(t.app, ownerKey, RUNS, {})).data!.runs.edges.length as number;

  beforeAll(async () => {
    t = await startTestApp("pglite", { authRequired: true });
    ownerKey = await t.createPrincipal("owner");
    const owner = t.as(ownerKey);
    workspaceId = (await createWorkspace(owner, "The goal")).id;
    const updated = await owner.request(UpdateCheckpointDocument, {
      input: { workspaceId, expectedRevision: 0, summary: "The checkpoint summary", questions: [] },
    });
    expectType(updated.updateCheckpoint, "UpdateCheckpointSuccess");
    const minted = await owner.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: workspaceId, operations: ["READ", "ADMIT"] }] } });
    token = expectType(minted.createAccessToken, "CreateAccessTokenSuccess").token;
  });
  afterAll(async () => t?.close());

  it("shows the workspace's checkpoint, as run(id) does", async () => {
    const selection = `workspace { id checkpoint { __typename ... on Checkpoint { revision summary } } }`;
    const answer = await rawRequest(t.app, token, admitAsking(selection), { w: workspaceId });
    expect(answer.errors).toBeUndefined();
    const run = answer.data!.admitRun.run;
    expect(run.workspace.checkpoint).toEqual({ __typename: "Checkpoint", revision: 1, summary: "The checkpoint summary" });
    const read = await rawRequest(t.app, token, `query($id: ID!) { run(id: $id) { ${selection} } }`, { id: run.id });
    expect(read.data!.run.workspace.checkpoint).toEqual(run.workspace.checkpoint);
  });

  it("asking for the new conversation's messages is refused before the run is admitted", async () => {
    const before = await runCount();
    const answer = await rawRequest(t.app, token, admitAsking(`conversation { id messages(first: 5) { edges { node { content } } } }`), { w: workspaceId });
    expect(answer.errors).toBeUndefined();
    expect(answer.data!.admitRun).toEqual({
      __typename: "ForbiddenError",
      message:
        "This access token may not READ the conversation its answer shows, so it cannot use admitRun as asked: without READ its answer shows only the id of what it acted on (and a run's status), not Conversation.messages.",
    });
    expect(await runCount()).toBe(before);
  });

  it("asking for the run's question and its conversation's id admits the run and shows them", async () => {
    const before = await runCount();
    const answer = await rawRequest(t.app, token, admitAsking(`question conversation { id }`), { w: workspaceId });
    expect(answer.errors).toBeUndefined();
    expect(answer.data!.admitRun).toMatchObject({
      __typename: "AdmitRunSuccess",
      run: { question: "What changed?", conversation: { id: expect.any(String) } },
    });
    expect(await runCount()).toBe(before + 1);
  });

  it("the SDK's AdmitRunDocument admits and shows the new conversation's id and title", async () => {
    const before = await runCount();
    const answer = await t.as(token).request(AdmitRunDocument, { input: { workspaceId, question: "And now?" } });
    const run = expectType(answer.admitRun, "AdmitRunSuccess").run;
    expect(run.conversation).toMatchObject({ id: expect.any(String), title: expect.any(String) });
    expect(await runCount()).toBe(before + 1);
  });
});
