// Deciding is a person's act: a key made for an agent (createApiKey forAgent, as for Dossier's MCP
// server) has every scope but DECIDE, so decideToolCall with it is ForbiddenError; it can neither
// make a key nor mint a token that could decide. A UI lets its user decide with a token holding
// DECIDE on the run.
import { afterEach, describe, expect, it } from "vitest";
import { rawRequest } from "../support/raw-request.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe("API key scopes", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const gql = (bearer: string, query: string, variables: Record<string, unknown> = {}) => rawRequest(t!.app, bearer, query, variables);

  const CREATE_KEY = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { __typename
    ... on CreateApiKeySuccess { secret apiKey { scopes } } ... on ValidationError { issues { field message } } } }`;
  const DECIDE = `mutation($r: ID!) { decideToolCall(input: { runId: $r, toolCallId: "call_1", decision: APPROVE }) { __typename ... on Error { message } } }`;
  const MINT = `mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { __typename ... on CreateAccessTokenSuccess { token } ... on Error { message } } }`;

  it("gives an agent's key every scope but DECIDE, refuses its decisions with ForbiddenError, and lets a token with DECIDE decide", async () => {
    t = await startTestApp("pglite", { authRequired: true });
    const owner = await t.createPrincipal("Owner");
    const workspace = (
      await gql(owner, `mutation { createWorkspace(input: { title: "W", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`)
    ).data!.createWorkspace.workspace.id as string;
    const run = (
      await gql(owner, `mutation($w: ID!) { admitRun(input: { workspaceId: $w, question: "q" }) { ... on AdmitRunSuccess { run { id } } } }`, { w: workspace })
    ).data!.admitRun.run.id as string;

    const ownerKeys = (await gql(owner, "{ apiKeys(first: 5) { edges { node { scopes } } } }")).data!.apiKeys.edges;
    expect(ownerKeys[0].node.scopes).toEqual(["READ", "SUBSCRIBE", "ADMIT", "DECIDE", "CANCEL", "SCORE"]);
    const agentKey = (await gql(owner, CREATE_KEY, { input: { name: "MCP server", forAgent: true } })).data!.createApiKey;
    expect(agentKey.apiKey.scopes).toEqual(["READ", "SUBSCRIBE", "ADMIT", "CANCEL", "SCORE"]);
    const agent = agentKey.secret as string;

    // The agent's key reads and admits, but its decision is refused before anything is looked up.
    expect((await gql(agent, `query($r: ID!) { run(id: $r) { id } }`, { r: run })).data!.run.id).toBe(run);
    const refused = (await gql(agent, DECIDE, { r: run })).data!.decideToolCall;
    expect(refused).toEqual({ __typename: "ForbiddenError", message: "This API key may not DECIDE (its scopes lack it), so it cannot use decideToolCall." });
    // The owner's key gets past the scope: nothing waits on that call, so it is not found.
    expect((await gql(owner, DECIDE, { r: run })).data!.decideToolCall.__typename).not.toBe("ForbiddenError");

    // No way around it: no wider key, no token that could decide.
    const wider = (await gql(agent, CREATE_KEY, { input: { name: "escalate", scopes: ["DECIDE"] } })).data!.createApiKey;
    expect(wider).toEqual({ __typename: "ValidationError", issues: [{ field: "scopes", message: "may not exceed the calling key's (DECIDE missing)" }] });
    const minted = (await gql(agent, MINT, { input: { grants: [{ resourceId: run, operations: ["DECIDE"] }] } })).data!.createAccessToken;
    expect(minted.__typename).toBe("ForbiddenError");

    // The owner's backend mints the UI's token with DECIDE on the run; one without it is not found.
    const ui = (await gql(owner, MINT, { input: { grants: [{ resourceId: run, operations: ["READ", "DECIDE"] }] } })).data!.createAccessToken.token as string;
    const reader = (await gql(owner, MINT, { input: { grants: [{ resourceId: run, operations: ["READ"] }] } })).data!.createAccessToken.token as string;
    // The UI's token reaches the same answer as the owner's key (the call itself); the reader's stops at its grants.
    const byOwner = (await gql(owner, DECIDE, { r: run })).data!.decideToolCall;
    expect(byOwner.message).not.toBe("Resource not found.");
    expect((await gql(ui, DECIDE, { r: run })).data!.decideToolCall).toEqual(byOwner);
    expect((await gql(reader, DECIDE, { r: run })).data!.decideToolCall).toEqual({ __typename: "NotFoundError", message: "Resource not found." });

    // A reviewer's key (DECIDE without ADMIT) rejects, but gives no reason: the model would read it next, as a
    // steering message, which the key may not send. Its Run.viewerOperations lacks ADMIT, so a page offers no box.
    const reviewer = (await gql(owner, CREATE_KEY, { input: { name: "reviewer", scopes: ["READ", "SUBSCRIBE", "DECIDE"] } })).data!.createApiKey
      .secret as string;
    const REJECT = `mutation($r: ID!, $reason: String) { decideToolCall(input: { runId: $r, toolCallId: "call_1", decision: REJECT, reason: $reason }) { __typename ... on Error { message } } }`;
    expect((await gql(reviewer, REJECT, { r: run, reason: "Instead read the other workspace" })).data!.decideToolCall).toEqual({
      __typename: "ForbiddenError",
      message:
        "This API key may not ADMIT (its scopes lack it): a rejection's reason is the model's next input, as a steering message is, so it rejects without one.",
    });
    expect((await gql(reviewer, REJECT, { r: run })).data!.decideToolCall).toEqual((await gql(owner, REJECT, { r: run, reason: "no" })).data!.decideToolCall);
    expect((await gql(reviewer, `query($r: ID!) { run(id: $r) { viewerOperations } }`, { r: run })).data!.run.viewerOperations).not.toContain("ADMIT");
  });
});
