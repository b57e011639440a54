// Any mutation, query or subscription the database fails for a moment, on PostgreSQL: a link that
// hangs (through a fault proxy), a pool with no free connection, a row held past the statement
// timeout. A mutation answers ServiceUnavailableError in its payload, saying honestly what was
// left behind (nothing; the change; or an outcome nobody can know, when the link hung with its
// COMMIT in flight); a query answers SERVICE_UNAVAILABLE with 503 and Retry-After. An ordinary
// error stays masked as "Unexpected error.".
import { createClient as createWsClient } from "graphql-ws";
import type pg from "pg";
import { WebSocket } from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { ArchiveWorkspaceDocument, CreateWorkspaceDocument, SteerRunDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { unavailableApp } from "../support/unavailable-app.js";
import { waitUntil } from "../support/wait.js";
import { whileConnectionHeld } from "../support/held-connection.js";
import { UNAVAILABLE_WARNING } from "../../src/graphql/transient-failures.js";

const INSTANCE = "unavailable-everywhere";
const NOT_CONFIRMED = /before the change was confirmed: it may or may not have been made/;

describe.runIf(backends.includes("postgres"))("requests the database fails for a moment, on PostgreSQL", () => {
  const h = unavailableApp(INSTANCE);
  afterEach(() => h.close());
  const start = h.start;

  /** A request over HTTP (in process), as any client sends it. */
  async function send(query: string, variables: Record<string, unknown>, accept: string, key?: string) {
    const headers = { "content-type": "application/json", accept, ...(key ? { authorization: `Bearer ${key}` } : {}) };
    return h.t!.app.yoga.fetch(new Request("http://127.0.0.1/graphql", { method: "POST", headers, body: JSON.stringify({ query, variables }) }));
  }
  async function post(query: string, variables: Record<string, unknown> = {}) {
    const response = await send(query, variables, "application/json");
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body: (await response.json()) as { data?: any; errors?: any[] } };
  }

  const count = async (db: pg.Client, table: string) => (await db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;
  // Both counts in one statement, one snapshot: a COMMIT the healed link delivers between two
  // separate reads would show a goal without its workspace that no reader could ever see.
  const workspaceRows = async (db: pg.Client) => {
    const { rows } = await db.query("SELECT (SELECT count(*)::int FROM workspace) AS workspaces, (SELECT count(*)::int FROM goal_version) AS goals");
    return { workspaces: rows[0].workspaces as number, goals: rows[0].goals as number };
  };

  const WORKSPACES = "query { workspaces(first: 5) { edges { node { id title } } } }";

  it("on a hung link, createWorkspace is told to read before repeating and writes nothing; a query or subscription gets SERVICE_UNAVAILABLE, 503 and Retry-After", async () => {
    const { client, sql } = await start({ timeouts: { connectMs: 2_000, queryMs: 1_000 } }, true);
    const existing = await createWorkspace(client, "before the hang");
    const watched = await admit(client, { question: "watched" });
    const before = await workspaceRows(sql);
    h.proxy!.hang();

    const created = (await client.request(CreateWorkspaceDocument, { input: { title: "hung", goal: "g" } })).createWorkspace;
    const unavailable = expectType(created, "ServiceUnavailableError");
    expect(unavailable.retryAfterSeconds).toBe(1);
    expect(unavailable.message).toMatch(NOT_CONFIRMED);

    const listed = await post(WORKSPACES);
    expect([listed.status, listed.retryAfter, listed.body.data]).toEqual([503, "1", null]);
    expect(listed.body.errors).toEqual([
      expect.objectContaining({
        path: ["workspaces"],
        extensions: { code: "SERVICE_UNAVAILABLE", retryAfterSeconds: 1 },
        message: expect.stringMatching(/Try again after/),
      }),
    ]);
    // A nullable field answers null with the same error; data was answered, so the status stays 200.
    const one = await post("query($id: ID!) { workspace(id: $id) { id } }", { id: existing.id });
    expect([one.status, one.body.data, one.body.errors?.map((error) => error.extensions.code)]).toEqual([200, { workspace: null }, ["SERVICE_UNAVAILABLE"]]);

    // A subscription whose first step (finding the run) fails is answered the same way, over SSE too.
    const events = await send("subscription($id: ID!) { runEvents(runId: $id) { status } }", { id: watched.run.id }, "text/event-stream");
    expect([events.status, events.headers.get("retry-after")]).toEqual([503, "1"]);
    expect(await events.text()).toMatch(/"extensions":\{"code":"SERVICE_UNAVAILABLE","retryAfterSeconds":1\}/);

    // The operator gets a warning for each, not an error.
    expect(h.logged.filter((entry) => entry.message === UNAVAILABLE_WARNING)).toHaveLength(4);
    expect(h.logged.filter((entry) => entry.level === "error")).toEqual([]);
    h.proxy!.heal();
    await h.settled();
    expect(await workspaceRows(sql)).toEqual(before);
    // The same requests succeed once the database is back.
    expectType((await client.request(CreateWorkspaceDocument, { input: { title: "hung", goal: "g" } })).createWorkspace, "CreateWorkspaceSuccess");
    expect((await post(WORKSPACES)).status).toBe(200);
  });

  it("an API key that cannot be looked up on a hung link: 503 and Retry-After over HTTP, a socket closed with 1013 (try again later)", async () => {
    await start({ timeouts: { connectMs: 2_000, queryMs: 1_000 } }, true, { listen: true, authRequired: true });
    const key = await h.t!.createPrincipal("Team backend");
    h.proxy!.hang();
    const refused = await send(WORKSPACES, {}, "application/json", key);
    expect([refused.status, refused.headers.get("retry-after")]).toEqual([503, "1"]);
    expect(((await refused.json()) as { errors: unknown[] }).errors).toEqual([
      expect.objectContaining({ extensions: { code: "SERVICE_UNAVAILABLE", retryAfterSeconds: 1 }, message: expect.stringMatching(/nothing was done/) }),
    ]);
    let closed: { code: number; reason: string } | undefined;
    const socket = createWsClient({
      url: h.t!.server!.wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      connectionParams: { headers: { Authorization: `Bearer ${key}` } },
      on: { closed: (event) => void (closed ??= event as { code: number; reason: string }) },
    });
    socket.subscribe({ query: WORKSPACES }, { next: () => undefined, error: () => undefined, complete: () => undefined });
    await waitUntil(() => closed, 10_000);
    await socket.dispose();
    // Not 4401: the key was not refused, and graphql-ws clients retry 1013.
    expect([closed!.code, closed!.reason]).toEqual([1013, "the database failed for a moment; try again"]);
  });

  it("a link that hangs with createWorkspace's COMMIT in flight is answered 'may or may not have been made'; either way nothing is half-written", async () => {
    const { client, sql } = await start({ timeouts: { connectMs: 2_000, queryMs: 1_000 } }, true);
    await createWorkspace(client, "warm-up");
    const before = await workspaceRows(sql);
    // The transaction's last statement (reading back the workspace it wrote) is answered; its
    // COMMIT is sent on a link that no longer answers.
    h.hangAfter = /^SELECT "t0"\."id", "t0"\."owner_id"/;
    const created = (await client.request(CreateWorkspaceDocument, { input: { title: "in doubt", goal: "g" } })).createWorkspace;
    expect(expectType(created, "ServiceUnavailableError").message).toMatch(/may or may not have been made/);
    h.proxy!.heal();
    await h.settled();
    // The COMMIT held by the link may arrive once it heals, or the session may end first: both
    // happen, which is why the client is told to read before repeating. The workspace and its
    // goal are committed together or not at all.
    const after = await workspaceRows(sql);
    expect([before.workspaces, before.workspaces + 1]).toContain(after.workspaces);
    expect(after.goals - before.goals).toBe(after.workspaces - before.workspaces);
  });

  it("a link that hangs once createWorkspace committed: its answer says the change was made, without 503 or Retry-After", async () => {
    const { client, sql } = await start({ timeouts: { connectMs: 2_000, queryMs: 1_000 } }, true);
    await createWorkspace(client, "warm-up");
    const before = await workspaceRows(sql);
    // The workspace is committed; reading it back for the answer meets the hung link.
    h.hangAfter = /^COMMIT/;
    const created = await post(
      'mutation { createWorkspace(input: { title: "committed", goal: "g" }) { __typename ... on CreateWorkspaceSuccess { workspace { id goal { statement } } } } }',
    );
    // Sending the mutation again would create a second workspace: nothing invites a retry.
    expect([created.status, created.retryAfter, created.body.data]).toEqual([200, null, null]);
    expect(created.body.errors).toEqual([
      expect.objectContaining({
        path: ["createWorkspace", "workspace", "goal"],
        extensions: { code: "SERVICE_UNAVAILABLE", retryAfterSeconds: 1 },
        message: expect.stringMatching(/^The mutation's change was made, but the database failed for a moment while its answer was read/),
      }),
    ]);
    h.proxy!.heal();
    await h.settled();
    expect(await workspaceRows(sql)).toEqual({ workspaces: before.workspaces + 1, goals: before.goals + 1 });
  });

  it("steerRun that finds no free pooled connection in time is told to try again and stores no input", async () => {
    const { client, db, sql } = await start({ timeouts: { connectMs: 300 }, poolSize: 1 });
    const run = await admit(client, { question: "steer me" });
    const inputs = await count(sql, "run_input");
    // The pool's one connection is busy meanwhile.
    await whileConnectionHeld(db, async () => {
      const steered = (await client.request(SteerRunDocument, { input: { runId: run.run.id, text: "focus on 2027" } })).steerRun;
      expect(expectType(steered, "ServiceUnavailableError").message).toMatch(NOT_CONFIRMED);
    });
    expect(await count(sql, "run_input")).toBe(inputs);
    expectType((await client.request(SteerRunDocument, { input: { runId: run.run.id, text: "focus on 2027" } })).steerRun, "SteerRunSuccess");
    expect(await count(sql, "run_input")).toBe(inputs + 1);
  });

  it("archiveWorkspace that outwaits a row held elsewhere (DB_QUERY_TIMEOUT_MS=2000) is told to try again and archives nothing", async () => {
    const { client, sql } = await start({ timeouts: { queryMs: 2_000 } });
    const workspace = await createWorkspace(client);
    await sql.query("BEGIN");
    await sql.query("SELECT 1 FROM workspace WHERE id = $1 FOR UPDATE", [idOfType(workspace.id, "Workspace")]);
    const archived = (await client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } })).archiveWorkspace;
    expect(expectType(archived, "ServiceUnavailableError").message).toMatch(NOT_CONFIRMED);
    await sql.query("COMMIT");
    await h.settled();
    const { rows } = await sql.query("SELECT archived_at FROM workspace WHERE id = $1", [idOfType(workspace.id, "Workspace")]);
    expect(rows[0].archived_at).toBeNull();
  });

  it("an error that is not the database's moment stays masked: 'Unexpected error.', logged as an error, no 503", async () => {
    const { client, sql } = await start({ timeouts: {} });
    await createWorkspace(client);
    // A table the app expects is gone: every statement on it fails, and trying again will not help.
    await sql.query("ALTER TABLE goal_version RENAME TO goal_version_gone");
    const created = await post('mutation { createWorkspace(input: { title: "t", goal: "g" }) { __typename } }');
    const listed = await post("query { workspaces(first: 5) { edges { node { id goal { statement } } } } }");
    for (const answer of [created, listed]) {
      expect(answer.retryAfter).toBeNull();
      expect(answer.status).not.toBe(503);
      expect(answer.body.errors?.map((error) => [error.message, error.extensions.code])).toEqual([["Unexpected error.", "INTERNAL_SERVER_ERROR"]]);
    }
    expect(h.logged.filter((entry) => entry.level === "error")).toHaveLength(2);
    expect(h.logged.filter((entry) => entry.message === UNAVAILABLE_WARNING)).toEqual([]);
  });
});
