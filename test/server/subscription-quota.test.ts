// Subscriptions per key and per principal (issue 36): past MAX_SUBSCRIPTIONS_PER_KEY a new
// subscription gets a SUBSCRIPTION_LIMIT error, over graphql-ws and SSE alike, while its
// connection stays open; a finished subscription gives its place back; other principals are
// not affected — and a flood of attempts by one key leaves another principal's reads as fast.
import { createClient as createWsClient } from "graphql-ws";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";

/**
 * Long enough for the server to have handled a completion sent before: the client hears nothing
 * back when a subscription it ended gives its place back.
 */
const pause = () => new Promise((resolve) => setTimeout(resolve, 1_000));

let t: TestApp | undefined;
const sockets: ReturnType<typeof createWsClient>[] = [];
afterEach(async () => {
  await Promise.all(sockets.splice(0).map((socket) => socket.dispose()));
  await t?.close();
  t = undefined;
});

type GraphQLErrors = { message: string; extensions?: Record<string, unknown> }[];

function socketFor(key: string) {
  const socket = createWsClient({ url: t!.server!.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { authorization: `Bearer ${key}` } });
  sockets.push(socket);
  return socket;
}

async function admitRun(key: string): Promise<string> {
  const response = await fetch(t!.server!.url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ query: 'mutation { admitRun(input: { question: "Hello?" }) { ... on AdmitRunSuccess { run { id } } } }' }),
  });
  return ((await response.json()) as { data: { admitRun: { run: { id: string } } } }).data.admitRun.run.id;
}

/**
 * Subscribes to a queued run's events: the run's current status arrives first, then nothing until
 * it changes, so the subscription stays open. `outcome` resolves with "open" once that first event
 * arrived (the server accepted it and holds its place), or with the errors of a refused one.
 */
function subscribe(socket: ReturnType<typeof createWsClient>, runId: string) {
  const updates = socket.iterate({ query: `subscription { runEvents(runId: "${runId}") { status } }` });
  const outcome = updates.next().then(
    () => "open" as const,
    (errors: unknown) => errors as GraphQLErrors,
  );
  return { updates, outcome };
}

/** The errors a subscription was refused with (an accepted one fails the test). */
async function refusal(attempt: ReturnType<typeof subscribe>): Promise<GraphQLErrors> {
  const outcome = await withTimeout(attempt.outcome, 10_000);
  expect(outcome).not.toBe("open");
  return outcome as GraphQLErrors;
}

describe("subscription quota per key and per principal", () => {
  it("refuses the subscription past the cap with SUBSCRIPTION_LIMIT over graphql-ws and SSE, keeps the connection, and frees places as subscriptions end", async () => {
    t = await startTestApp("pglite", { listen: true, authRequired: true, maxSubscriptionsPerKey: 3 });
    const [key, other] = [await t.createPrincipal("greedy"), await t.createPrincipal("other")];
    const runId = await admitRun(key);
    const socket = socketFor(key);
    const open = [subscribe(socket, runId), subscribe(socket, runId), subscribe(socket, runId)];
    expect(await withTimeout(Promise.all(open.map((o) => o.outcome)), 10_000)).toEqual(["open", "open", "open"]);

    const errors = await refusal(subscribe(socket, runId));
    expect(errors?.[0]?.extensions).toMatchObject({ code: "SUBSCRIPTION_LIMIT", limit: 3 });
    // The connection stays open: its other operations go on.
    expect((await withTimeout(socket.iterate({ query: "{ __typename }" }).next(), 10_000)).value).toEqual({ data: { __typename: "Query" } });

    // The same key over SSE shares the count.
    const sse = await fetch(`${t.server!.url}?query=${encodeURIComponent(`subscription { runEvents(runId: "${runId}") { status } }`)}`, {
      headers: { accept: "text/event-stream", authorization: `Bearer ${key}` },
    });
    const text = await withTimeout(sse.text(), 10_000);
    expect(text).toContain("SUBSCRIPTION_LIMIT");

    // Another principal has its own share.
    const otherRun = await admitRun(other);
    const theirs = subscribe(socketFor(other), otherRun);
    expect(await withTimeout(theirs.outcome, 10_000)).toBe("open");

    // One of the key's subscriptions ends: its place is free again.
    await open[0]!.updates.return?.();
    await pause();
    const again = subscribe(socket, runId);
    expect(await withTimeout(again.outcome, 10_000)).toBe("open");
    await theirs.updates.return?.();
  });
});

describe("a flood of subscriptions by one key", () => {
  it("6,000 attempts: all past the cap refused, and another principal's reads keep their median", async () => {
    t = await startTestApp("pglite", { listen: true, authRequired: true, maxSubscriptionsPerKey: 100, maxSubscriptionsPerConnection: 10_000 });
    const [key, other] = [await t.createPrincipal("flood"), await t.createPrincipal("reader")];
    const runId = await admitRun(key);
    const read = async () => {
      const started = performance.now();
      const response = await fetch(t!.server!.url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${other}` },
        body: JSON.stringify({ query: "{ workspaces(first: 10) { edges { node { id } } } }" }),
      });
      expect(response.status).toBe(200);
      await response.json();
      return performance.now() - started;
    };
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    for (let i = 0; i < 10; i += 1) await read(); // warm
    const before: number[] = [];
    for (let i = 0; i < 40; i += 1) before.push(await read());

    const socket = socketFor(key);
    const attempts = Array.from({ length: 6_000 }, () => subscribe(socket, runId));
    const during: number[] = [];
    // Each attempt ends refused or open (its first event arrived).
    const refusals = withTimeout(Promise.all(attempts.map((a) => a.outcome)), 60_000);
    for (let i = 0; i < 40; i += 1) during.push(await read());
    const outcomes = await refusals;
    const refused = outcomes.filter((o) => Array.isArray(o) && o[0]?.extensions?.code === "SUBSCRIPTION_LIMIT").length;
    expect(refused).toBe(5_900);
    expect(outcomes.filter((o) => o === "open")).toHaveLength(100);
    const [p50Before, p50During] = [median(before), median(during)];
    console.log(JSON.stringify({ p50BeforeMs: p50Before.toFixed(1), p50DuringMs: p50During.toFixed(1) }));
    // Within noise on a shared machine: the flood is refused before anything runs for it.
    expect(p50During).toBeLessThan(p50Before * 3 + 25);
  }, 120_000);
});

describe("an access token's subscriptions", () => {
  it("are its own places, not its key's: an end user's page at its cap leaves the team's key and another token theirs; tokens together hold half the principal's", async () => {
    t = await startTestApp("pglite", { listen: true, authRequired: true, maxSubscriptionsPerKey: 6, maxSubscriptionsPerToken: 2 });
    const key = await t.createPrincipal("team");
    const runId = await admitRun(key);
    const mint = async () => {
      const response = await fetch(t!.server!.url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify({
          query: "mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { ... on CreateAccessTokenSuccess { token } } }",
          variables: { input: { grants: [{ resourceId: runId, operations: ["SUBSCRIBE"] }] } },
        }),
      });
      return ((await response.json()) as { data: { createAccessToken: { token: string } } }).data.createAccessToken.token;
    };
    const [greedy, polite, late] = [await mint(), await mint(), await mint()];
    // The greedy token over graphql-ws: two places, then SUBSCRIPTION_LIMIT naming the token.
    const tokenSocket = socketFor(greedy);
    const held = [subscribe(tokenSocket, runId), subscribe(tokenSocket, runId)];
    expect(await withTimeout(Promise.all(held.map((h) => h.outcome)), 10_000)).toEqual(["open", "open"]);
    const third = await refusal(subscribe(tokenSocket, runId));
    expect(third?.[0]).toMatchObject({
      message: expect.stringContaining("This access token already has 2"),
      extensions: { code: "SUBSCRIPTION_LIMIT", limit: 2 },
    });
    // Over SSE too: its count is the same wherever it subscribes.
    const sse = await fetch(`${t.server!.url}?query=${encodeURIComponent(`subscription { runEvents(runId: "${runId}") { status } }`)}`, {
      headers: { accept: "text/event-stream", authorization: `Bearer ${greedy}` },
    });
    expect(await withTimeout(sse.text(), 10_000)).toContain("SUBSCRIPTION_LIMIT");
    // The team's key and the other end user's token still subscribe (the key's own count is untouched).
    const keyOwn = subscribe(socketFor(key), runId);
    const other = subscribe(socketFor(polite), runId);
    expect(await withTimeout(Promise.all([keyOwn.outcome, other.outcome]), 10_000)).toEqual(["open", "open"]);
    // The principal's tokens together hold at most half its places (3 of 6): a third end user's page
    // is refused while the team's key keeps the other half.
    const tokensFull = await refusal(subscribe(socketFor(late), runId));
    expect(tokensFull?.[0]).toMatchObject({
      message: expect.stringContaining("Your principal's access tokens already hold 3"),
      extensions: { code: "SUBSCRIPTION_LIMIT", limit: 3 },
    });
    const keyMore = [subscribe(socketFor(key), runId), subscribe(socketFor(key), runId)];
    expect(await withTimeout(Promise.all(keyMore.map((h) => h.outcome)), 10_000)).toEqual(["open", "open"]);
    // The principal's cap still counts them all: 2 + 1 + 1 + 2 = 6 open, the key's next one is refused.
    const over = await refusal(subscribe(socketFor(key), runId));
    expect(over?.[0]?.extensions).toMatchObject({ code: "SUBSCRIPTION_LIMIT", limit: 6 });
    for (const open of [...held, keyOwn, other, ...keyMore]) await open.updates.return?.();
  });
});
