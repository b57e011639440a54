// Run.viewerOperations: what the request's own key or token may do with a run, as the API then
// enforces it — a UI shows Stop (CANCEL), Approve/Reject (DECIDE) and its message box (ADMIT:
// steerRun, which a token may use only on a run that reads no more than it may) from it.
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { parse } from "graphql";
import { afterEach, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { type AccessOperation, CancelRunDocument, CreateAccessTokenDocument, CreateApiKeyDocument, SteerRunDocument } from "../../sdk/generated/graphql.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const OPERATIONS = parse("query RunOperations($id: ID!) { node(id: $id) { ... on Run { viewerOperations } } }") as TypedDocumentNode<
  { node: { viewerOperations?: AccessOperation[] } | null },
  { id: string }
>;

describe("Run.viewerOperations", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const operationsOf = async (client: DossierClient, runId: string) =>
    [...((await client.request(OPERATIONS, { id: runId })).node?.viewerOperations ?? [])].sort();

  async function token(client: DossierClient, resourceId: string, operations: AccessOperation[]) {
    const result = await client.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId, operations }] } });
    return expectType(result.createAccessToken, "CreateAccessTokenSuccess").token;
  }

  it("is the key's scopes or the token's grants on the run, and what it lacks is refused", async () => {
    t = await startTestApp("pglite", { authRequired: true });
    const owner = t.as(await t.createPrincipal("owner"));
    const workspace = await createWorkspace(owner);
    const { run } = await admit(owner, { workspaceId: workspace.id, question: "What may I do?" });

    expect(await operationsOf(owner, run.id)).toEqual(["ADMIT", "CANCEL", "DECIDE", "READ", "SCORE", "SUBSCRIBE"]);

    const created = await owner.request(CreateApiKeyDocument, { input: { name: "agent", forAgent: true } });
    const agent = t.as(expectType(created.createApiKey, "CreateApiKeySuccess").secret);
    expect(await operationsOf(agent, run.id)).toEqual(["ADMIT", "CANCEL", "READ", "SCORE", "SUBSCRIBE"]);

    // A token granted on the workspace covers its runs; one granted on the run itself, only that.
    const watcher = t.as(await token(owner, workspace.id, ["READ", "SUBSCRIBE"]));
    expect(await operationsOf(watcher, run.id)).toEqual(["READ", "SUBSCRIBE"]);
    const canceller = t.as(await token(owner, run.id, ["READ", "CANCEL"]));
    expect(await operationsOf(canceller, run.id)).toEqual(["CANCEL", "READ"]);

    // What it says is what the API does: the watcher may not cancel, the canceller may.
    expectType((await watcher.request(CancelRunDocument, { input: { runId: run.id } })).cancelRun, "NotFoundError");
    expectType((await canceller.request(CancelRunDocument, { input: { runId: run.id } })).cancelRun, "CancelRunSuccess");
  });

  it("steering needs ADMIT on the run, its conversation or its workspace, and for a token a run that reads no more than it may", async () => {
    t = await startTestApp("pglite", { authRequired: true });
    const owner = t.as(await t.createPrincipal("owner"));
    const workspace = await createWorkspace(owner);
    const { run } = await admit(owner, { workspaceId: workspace.id, question: "Steer me." });
    const steer = (client: DossierClient, runId = run.id) =>
      client.request(SteerRunDocument, { input: { runId, text: "Shorter, please." } }).then((result) => result.steerRun.__typename);

    const watcher = t.as(await token(owner, workspace.id, ["READ", "SUBSCRIBE"]));
    expect(await steer(watcher)).toBe("NotFoundError");
    // The key's run reads every publication of the principal: a token's ADMIT does not steer it.
    const chat = t.as(await token(owner, workspace.id, ["READ", "ADMIT"]));
    expect(await operationsOf(chat, run.id)).toEqual(["READ"]);
    expect(await steer(chat)).toBe("ForbiddenError");
    // Its own run it steers, as the message box it is shown says.
    const { run: own } = await admit(chat, { workspaceId: workspace.id, question: "Steer me too." });
    expect(await operationsOf(chat, own.id)).toEqual(["ADMIT", "READ"]);
    expect(await steer(chat, own.id)).toBe("SteerRunSuccess");
    const created = await owner.request(CreateApiKeyDocument, { input: { name: "reader", scopes: ["READ"] } });
    const reader = t.as(expectType(created.createApiKey, "CreateApiKeySuccess").secret);
    expect(await steer(reader)).toBe("ForbiddenError");
  });
});
