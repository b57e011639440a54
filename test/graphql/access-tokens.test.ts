// Access tokens for browsers: an API key mints a short-lived token for some resources and
// operations; a request with it sees only those (null, filtered lists, NotFound, FORBIDDEN),
// never the principal's keys or webhooks; revoking the minting key refuses its tokens at once; an
// expired token is refused with the reason, and its subscriptions end: graphql-ws closes with 4401
// "token expired", SSE ends with TOKEN_EXPIRED.
import { createClient as createWsClient } from "graphql-ws";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Answer = { status: number; body: { data?: Record<string, any>; errors?: { message: string; extensions?: { code?: string } }[] } };

describe("access tokens", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  /** One GraphQL request in process, with a Bearer value (API key or token) or none. */
  const gql = async (bearer: string | undefined, query: string, variables: Record<string, unknown> = {}): Promise<Answer> => {
    const response = await t!.app.yoga.fetch(
      new Request("http://127.0.0.1/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
        body: JSON.stringify({ query, variables }),
      }),
    );
    return { status: response.status, body: (await response.json()) as Answer["body"] };
  };

  const MINT = `mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) {
    __typename ... on CreateAccessTokenSuccess { token expiresAt } ... on Error { message } ... on ValidationError { issues { field message } } } }`;
  const mint = async (key: string | undefined, grants: { resourceId: string; operations: string[] }[], extra: Record<string, unknown> = {}) =>
    (await gql(key, MINT, { input: { grants, ...extra } })).body.data!.createAccessToken as {
      __typename: string;
      token: string;
      expiresAt: string;
      message: string;
    };

  async function setUp() {
    t = await startTestApp("pglite", { listen: true, authRequired: true });
    const key = await t.createPrincipal("Team backend");
    const create = async (title: string) =>
      (await gql(key, `mutation { createWorkspace(input: { title: "${title}", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`)).body
        .data!.createWorkspace.workspace.id as string;
    const admit = async (workspaceId: string) =>
      (
        await gql(key, `mutation($w: ID!) { admitRun(input: { workspaceId: $w, question: "q" }) { ... on AdmitRunSuccess { run { id } } } }`, {
          w: workspaceId,
        })
      ).body.data!.admitRun.run.id as string;
    const granted = await create("Granted");
    const other = await create("Other");
    return { key, granted, other, grantedRun: await admit(granted), otherRun: await admit(other) };
  }

  it("mints only with an API key, within 1 to 3600 seconds, for the principal's own resources", async () => {
    const { key, granted } = await setUp();
    const before = Date.now();
    const minted = await mint(key, [{ resourceId: granted, operations: ["READ"] }]);
    expect(minted.__typename).toBe("CreateAccessTokenSuccess");
    // 900 seconds by default.
    expect(new Date(minted.expiresAt).getTime() - before).toBeGreaterThan(895_000);
    expect(new Date(minted.expiresAt).getTime() - before).toBeLessThanOrEqual(901_000);
    for (const seconds of [0, 3_601]) {
      const refused = await mint(key, [{ resourceId: granted, operations: ["READ"] }], { expiresInSeconds: seconds });
      expect(refused).toMatchObject({ __typename: "ValidationError", issues: [{ field: "expiresInSeconds", message: "must be from 1 to 3600" }] });
    }
    // A token cannot mint another; another principal's workspace is not found.
    expect(await mint(minted.token, [{ resourceId: granted, operations: ["READ"] }])).toMatchObject({ __typename: "ForbiddenError" });
    const stranger = await t!.createPrincipal("Stranger");
    expect(await mint(stranger, [{ resourceId: granted, operations: ["READ"] }])).toMatchObject({ __typename: "NotFoundError" });
  });

  it("sees only the granted workspace and what is linked to it, and none of the principal's keys, webhooks or usage", async () => {
    const { key, granted, other, grantedRun, otherRun } = await setUp();
    const { token } = await mint(key, [{ resourceId: granted, operations: ["READ", "SUBSCRIBE"] }]);
    const read = await gql(
      token,
      `query($a: ID!, $b: ID!, $ra: ID!, $rb: ID!) { a: workspace(id: $a) { title } b: workspace(id: $b) { title }
      na: node(id: $a) { id } nb: node(id: $b) { id } ra: run(id: $ra) { id workspace { title } } rb: run(id: $rb) { id }
      workspaces(first: 10) { edges { node { title } } } runs(first: 10) { edges { node { id } } } }`,
      { a: granted, b: other, ra: grantedRun, rb: otherRun },
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data).toEqual({
      a: { title: "Granted" },
      b: null,
      na: { id: granted },
      nb: null,
      ra: { id: grantedRun, workspace: { title: "Granted" } },
      rb: null,
      workspaces: { edges: [{ node: { title: "Granted" } }] },
      runs: { edges: [{ node: { id: grantedRun } }] },
    });
    // A grant on one run shows that run, not the workspace it lies in.
    const { token: runOnly } = await mint(key, [{ resourceId: grantedRun, operations: ["READ"] }]);
    const throughRun = await gql(runOnly, `query($r: ID!, $a: ID!) { run(id: $r) { id workspace { title } } workspace(id: $a) { title } }`, {
      r: grantedRun,
      a: granted,
    });
    expect(throughRun.body.data).toEqual({ run: { id: grantedRun, workspace: null }, workspace: null });
    // The principal's own things: refused, never an empty answer that looks like none.
    for (const query of [
      "{ viewer { id } }",
      "{ apiKeys(first: 5) { edges { node { id } } } }",
      "{ webhooks { edges { node { id } } } }",
      "{ mcpServers { edges { node { name } } } }",
    ]) {
      const refused = await gql(token, query);
      expect(refused.body.data ?? null).toBeNull();
      expect(refused.body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    }
    const keys = await gql(token, `query($r: ID!) { run(id: $r) { admittedBy { name apiKeys(first: 5) { edges { node { id prefix } } } } } }`, {
      r: grantedRun,
    });
    expect(keys.body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    const webhook = await gql(token, `mutation { createWebhook(input: { url: "https://hooks.example/x", events: [RUN_SUCCEEDED] }) { __typename } }`);
    expect(webhook.body.data?.createWebhook).toEqual({ __typename: "ForbiddenError" });
    expect(await t!.app.db.prisma.webhook.count()).toBe(0);
  });

  it("answers NotFound to mutations outside its grants and runs those inside them", async () => {
    const { key, granted, other, grantedRun } = await setUp();
    const { token: reader } = await mint(key, [{ resourceId: granted, operations: ["READ"] }]);
    const { token: admitter } = await mint(key, [{ resourceId: granted, operations: ["ADMIT", "CANCEL"] }]);
    const admit = (bearer: string, w: string) =>
      gql(bearer, `mutation($w: ID!) { admitRun(input: { workspaceId: $w, question: "more" }) { __typename } }`, { w });
    const cancel = (bearer: string, r: string) => gql(bearer, `mutation($r: ID!) { cancelRun(input: { runId: $r }) { __typename } }`, { r });
    const runs = async () => await t!.app.db.prisma.run.count();
    expect((await admit(reader, granted)).body.data!.admitRun.__typename).toBe("NotFoundError");
    expect((await admit(admitter, other)).body.data!.admitRun.__typename).toBe("NotFoundError");
    expect(await runs()).toBe(2);
    expect((await admit(admitter, granted)).body.data!.admitRun.__typename).toBe("AdmitRunSuccess");
    expect(await runs()).toBe(3);
    expect((await cancel(reader, grantedRun)).body.data!.cancelRun.__typename).toBe("NotFoundError");
    expect((await cancel(admitter, grantedRun)).body.data!.cancelRun.__typename).toBe("CancelRunSuccess");
  });

  it("answers an admission's run with its workspace only for a token that may read the workspace", async () => {
    const { key, granted } = await setUp();
    const { token: admitter } = await mint(key, [{ resourceId: granted, operations: ["ADMIT"] }]);
    const { token: both } = await mint(key, [{ resourceId: granted, operations: ["ADMIT", "READ"] }]);
    const admit = async (bearer: string) =>
      (
        await gql(
          bearer,
          `mutation($w: ID!) { admitRun(input: { workspaceId: $w, question: "more" }) { ... on AdmitRunSuccess { run { workspace { id title } } } } }`,
          {
            w: granted,
          },
        )
      ).body.data!.admitRun.run;
    expect(await admit(admitter)).toEqual({ workspace: null });
    expect(await admit(both)).toEqual({ workspace: { id: granted, title: "Granted" } });
  });

  it("is refused at once when the minting key is revoked, and with the reason once expired", async () => {
    const { key, granted } = await setUp();
    const { token } = await mint(key, [{ resourceId: granted, operations: ["READ"] }]);
    const { token: short } = await mint(key, [{ resourceId: granted, operations: ["READ"] }], { expiresInSeconds: 1 });
    const forged = `${token.slice(0, -4)}AAAA`;
    const read = (bearer: string) => gql(bearer, `query($w: ID!) { workspace(id: $w) { title } }`, { w: granted });
    expect((await read(token)).body.data!.workspace.title).toBe("Granted");
    const refusedForged = await read(forged);
    expect([refusedForged.status, refusedForged.body.errors![0]!.message]).toEqual([401, "Invalid access token."]);

    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const expired = await read(short);
    expect([expired.status, expired.body.errors![0]!.message]).toEqual([401, "The access token expired (token expired)."]);

    const keyId = (await gql(key, "{ viewer { id } apiKeys(first: 1) { edges { node { id } } } }")).body.data!.apiKeys.edges[0].node.id;
    await gql(key, `mutation($id: ID!) { revokeApiKey(input: { id: $id }) { __typename } }`, { id: keyId });
    const revoked = await read(token);
    expect([revoked.status, revoked.body.errors![0]!.message]).toEqual([401, "The API key that issued this access token was revoked."]);
  });

  it('closes its graphql-ws subscriptions with 4401 "token expired" and ends its SSE streams when it expires', async () => {
    const { key, granted, other } = await setUp();
    const { token } = await mint(key, [{ resourceId: granted, operations: ["READ", "SUBSCRIBE"] }], { expiresInSeconds: 2 });
    const closed = new Promise<{ code: number; reason: string }>((resolve) => {
      const client = createWsClient({
        url: t!.server!.wsUrl,
        webSocketImpl: WebSocket,
        retryAttempts: 0,
        connectionParams: { headers: { authorization: `Bearer ${token}` } },
        on: { closed: (event) => resolve(event as { code: number; reason: string }) },
      });
      client.subscribe(
        { query: `subscription($w: ID!) { workspaceEvents(workspaceId: $w) { __typename } }`, variables: { w: granted } },
        {
          next: () => undefined,
          error: () => undefined,
          complete: () => undefined,
        },
      );
    });
    // Another workspace is not found over SSE; the granted one streams until the token expires.
    const sse = (w: string) =>
      fetch(
        `${t!.server!.url}?query=${encodeURIComponent("subscription($w: ID!) { workspaceEvents(workspaceId: $w) { __typename } }")}&variables=${encodeURIComponent(JSON.stringify({ w }))}`,
        {
          headers: { accept: "text/event-stream", authorization: `Bearer ${token}` },
        },
      );
    const refused = await (await sse(other)).text();
    expect(refused).toContain("NOT_FOUND");
    const started = Date.now();
    const stream = await (await sse(granted)).text();
    expect(stream).toContain("TOKEN_EXPIRED");
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await closed).toMatchObject({ code: 4401, reason: "token expired" });
  });
});
