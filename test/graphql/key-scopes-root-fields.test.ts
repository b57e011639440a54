// A key's scopes hold on every root field, not only on runs: an agent's key (no DECIDE) cannot lift
// the approval an MCP server's owner required, a read-only key cannot revoke (or even see) its
// owner's full key nor delete a workspace — which takes a full key: an agent's key archives and
// restores one but cannot delete it — and a key that may only subscribe cannot list keys.
import { afterEach, describe, expect, it } from "vitest";
import { rawRequest } from "../support/raw-request.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

// Generous: each test starts an app of its own and makes several keys, on a machine that may be loaded.
describe("API key scopes on every root field", { timeout: 180_000 }, () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const gql = (bearer: string, query: string, variables: Record<string, unknown> = {}) => rawRequest(t!.app, bearer, query, variables);
  const key = async (bearer: string, input: Record<string, unknown>): Promise<string> => {
    const created = await gql(bearer, `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { ... on CreateApiKeySuccess { secret } } }`, {
      input,
    });
    return created.data!.createApiKey.secret as string;
  };
  const KEYS = "{ apiKeys(first: 10) { edges { node { id name } } } }";
  const keyNames = async (bearer: string) => ((await gql(bearer, KEYS)).data!.apiKeys.edges as { node: { name: string } }[]).map((e) => e.node.name).sort();

  it("refuses an agent's key the MCP server setting that holds its calls for a person", async () => {
    t = await startTestApp("pglite", { authRequired: true });
    const owner = await t.createPrincipal("Owner");
    const agent = await key(owner, { name: "MCP server", forAgent: true });
    const UPSERT = `mutation($r: Boolean) { upsertMcpServer(input: { name: "tools", transport: HTTP, url: "https://mcp.example.com/", enabled: false, requireApproval: $r }) {
      __typename ... on UpsertMcpServerSuccess { mcpServer { requireApproval } } ... on Error { message } } }`;
    expect((await gql(owner, UPSERT, { r: true })).data!.upsertMcpServer).toEqual({
      __typename: "UpsertMcpServerSuccess",
      mcpServer: { requireApproval: true },
    });

    expect((await gql(agent, UPSERT, { r: false })).data!.upsertMcpServer).toEqual({
      __typename: "ForbiddenError",
      message: "This API key may not DECIDE (its scopes lack it), so it cannot use upsertMcpServer.",
    });
    const deleted = (await gql(agent, `mutation { deleteMcpServer(input: { name: "tools" }) { __typename } }`)).data!.deleteMcpServer;
    expect(deleted.__typename).toBe("ForbiddenError");
    // The agent still reads the server (READ): its calls still wait for a person.
    const servers = await gql(agent, "{ mcpServers { edges { node { name requireApproval } } } }");
    expect(servers.data!.mcpServers.edges).toEqual([{ node: { name: "tools", requireApproval: true } }]);
  });

  it("lets a read-only key neither revoke nor list its owner's full key, nor delete a workspace", async () => {
    t = await startTestApp("pglite", { authRequired: true });
    const owner = await t.createPrincipal("Owner");
    const reader = await key(owner, { name: "reader", scopes: ["READ"] });
    const workspace = (
      await gql(owner, `mutation { createWorkspace(input: { title: "W", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`)
    ).data!.createWorkspace.workspace.id as string;
    const ownerKeyId = ((await gql(owner, KEYS)).data!.apiKeys.edges as { node: { id: string; name: string } }[]).find((e) => e.node.name === "first key")!.node
      .id;

    const REVOKE = `mutation($id: ID!) { revokeApiKey(input: { id: $id }) { __typename ... on Error { message } } }`;
    expect((await gql(reader, REVOKE, { id: ownerKeyId })).data!.revokeApiKey.__typename).toBe("NotFoundError");
    expect((await gql(owner, "{ viewer { name } }")).data).toEqual({ viewer: { name: "Owner" } });
    // It sees only the keys within its scopes (itself), in every list and by id.
    expect(await keyNames(reader)).toEqual(["reader"]);
    expect(await keyNames(owner)).toEqual(["first key", "reader"]);
    const viewerKeys = await gql(reader, "{ viewer { apiKeys(first: 10) { edges { node { name } } } } }");
    expect(viewerKeys.data!.viewer.apiKeys.edges).toEqual([{ node: { name: "reader" } }]);
    expect((await gql(reader, `query($id: ID!) { node(id: $id) { id } }`, { id: ownerKeyId })).data!.node).toBeNull();

    const DELETE = `mutation($id: ID!) { deleteWorkspace(input: { workspaceId: $id }) { __typename ... on Error { message } } }`;
    expect((await gql(reader, DELETE, { id: workspace })).data!.deleteWorkspace).toEqual({
      __typename: "ForbiddenError",
      message:
        "This API key may not SUBSCRIBE, ADMIT, DECIDE, CANCEL, SCORE (its scopes lack it), so it cannot use deleteWorkspace, which needs a key with every scope.",
    });
    expect((await gql(owner, `query($id: ID!) { workspace(id: $id) { title } }`, { id: workspace })).data!.workspace).toEqual({ title: "W" });
    // What it may do with keys stays within its own scopes: it revokes a key no wider than itself.
    const other = await key(reader, { name: "other reader", scopes: ["READ"] });
    const otherId = ((await gql(reader, KEYS)).data!.apiKeys.edges as { node: { id: string; name: string } }[]).find((e) => e.node.name === "other reader")!
      .node.id;
    expect((await gql(reader, REVOKE, { id: otherId })).data!.revokeApiKey.__typename).toBe("RevokeApiKeySuccess");
    expect((await gql(other, "{ viewer { name } }")).data ?? null).toBeNull();
  });

  it("lets an agent's key archive and restore a workspace but not delete it, which takes a full key", async () => {
    t = await startTestApp("pglite", { authRequired: true });
    const owner = await t.createPrincipal("Owner");
    const agent = await key(owner, { name: "agent", scopes: ["READ", "ADMIT"] });
    const workspace = (
      await gql(agent, `mutation { createWorkspace(input: { title: "W", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`)
    ).data!.createWorkspace.workspace.id as string;
    const state = async () => (await gql(owner, `query($id: ID!) { workspace(id: $id) { title archivedAt } }`, { id: workspace })).data!.workspace;

    const DELETE = `mutation($id: ID!) { deleteWorkspace(input: { workspaceId: $id }) { __typename ... on Error { message } } }`;
    expect((await gql(agent, DELETE, { id: workspace })).data!.deleteWorkspace).toEqual({
      __typename: "ForbiddenError",
      message:
        "This API key may not SUBSCRIBE, DECIDE, CANCEL, SCORE (its scopes lack it), so it cannot use deleteWorkspace, which needs a key with every scope.",
    });
    expect(await state()).toEqual({ title: "W", archivedAt: null });
    // Archiving is undone by restoring: both stay with ADMIT.
    const ref = { input: { workspaceId: workspace } };
    const archive = `mutation($input: WorkspaceRefInput!) { archiveWorkspace(input: $input) { __typename } }`;
    const restore = `mutation($input: WorkspaceRefInput!) { restoreWorkspace(input: $input) { __typename } }`;
    expect((await gql(agent, archive, ref)).data!.archiveWorkspace.__typename).toBe("ArchiveWorkspaceSuccess");
    expect((await state()).archivedAt).not.toBeNull();
    expect((await gql(agent, restore, ref)).data!.restoreWorkspace.__typename).toBe("RestoreWorkspaceSuccess");
    expect(await state()).toEqual({ title: "W", archivedAt: null });

    expect((await gql(owner, DELETE, { id: workspace })).data!.deleteWorkspace).toEqual({ __typename: "DeleteWorkspaceSuccess" });
    expect(await state()).toBeNull();
  });

  it("refuses the key listing to a key that may only subscribe, and a full key's settings to an agent's key", async () => {
    t = await startTestApp("pglite", { authRequired: true });
    const owner = await t.createPrincipal("Owner");
    const subscriber = await key(owner, { name: "sub", scopes: ["SUBSCRIBE"] });
    const listed = await gql(subscriber, KEYS);
    expect(listed.data ?? null).toBeNull();
    expect(listed.errors?.[0]).toMatchObject({
      message: "This API key may not READ (its scopes lack it), so it cannot use apiKeys.",
      extensions: { code: "FORBIDDEN" },
    });

    const agent = await key(owner, { name: "MCP server", forAgent: true });
    const workspace = (
      await gql(agent, `mutation { createWorkspace(input: { title: "W", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`)
    ).data!.createWorkspace.workspace.id as string;
    const budget = await gql(
      agent,
      `mutation($w: ID!) { setWorkspaceBudget(input: { workspaceId: $w, monthlyBudget: "1000000" }) { __typename ... on Error { message } } }`,
      {
        w: workspace,
      },
    );
    expect(budget.data!.setWorkspaceBudget.__typename).toBe("ForbiddenError");
    const hook = await gql(agent, `mutation { createWebhook(input: { url: "https://hooks.example/x", events: [RUN_WAITING] }) { __typename } }`);
    expect(hook.data!.createWebhook.__typename).toBe("ForbiddenError");
    expect(await t.app.db.prisma.webhook.count()).toBe(0);
  });
});
