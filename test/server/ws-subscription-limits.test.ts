// The cost and page-size limits hold for graphql-ws subscriptions as they do over HTTP and SSE,
// the shared ones (traceUpdates, workspaceEvents) included: their responses are executed once per
// update outside Yoga's pipeline, so a costly selection would otherwise run in full for every update
// (a few aliases of lists inside lists: hundreds of thousands of objects, megabytes each time). A
// refused subscription gets graphql-ws's error message with the SSE refusal's errors, before it
// starts; a cheap one of the same document streams and is still shared.
import { createClient as createWsClient } from "graphql-ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { UpdateGoalDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { DEFAULT_QUERY_LIMITS } from "../../src/server/hardening.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";

const aliases = (count: number, selection: (i: number) => string) => Array.from({ length: count }, (_, i) => selection(i)).join(" ");
/** At $n = 100: 102,022 field values (the limit is 100,000); at $n = 1: 52. */
const WORKSPACE_EVENTS = `subscription($id: ID!, $n: Int) { workspaceEvents(workspaceId: $id) { kind ${aliases(
  5,
  (i) => `r${i}: run { conversation { runs(first: $n) { edges { node { conversation { runs(first: $n) { edges { node { id } } } } } } } } }`,
)} } }`;
/** At $n = 100: 152,518 field values; at $n = 1: 58. */
const TRACE_UPDATES = `subscription($runId: ID!, $n: Int) { traceUpdates(runId: $runId) { seq kind ${aliases(
  5,
  (i) => `s${i}: span { scores(first: $n) { edges { node { id target { ... on Span { scores(first: $n) { edges { node { id value } } } } } } } } }`,
)} } }`;

type Errors = { message: string; extensions?: { code?: string } }[];
type Payload = { query: string; variables: Record<string, unknown> };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp("pglite", { listen: true });
});
afterAll(async () => {
  await t.close();
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The first thing a graphql-ws subscription is sent: its refusal, or its first result once `update` made one. */
async function firstAnswer(payload: Payload, update: () => Promise<unknown>): Promise<{ errors?: Errors; next?: { data?: unknown; errors?: Errors } }> {
  const client = createWsClient({ url: t.server!.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
  try {
    const first = client
      .iterate(payload)
      .next()
      .then(
        (step) => ({ next: step.value as { data?: unknown; errors?: Errors } }),
        (errors: unknown) => ({ errors: errors as Errors }),
      );
    await sleep(300);
    await update();
    return await withTimeout(first, 10_000);
  } finally {
    await client.dispose();
  }
}

/** What SSE answers the same subscription: the errors of its one result. */
async function overSse(payload: Payload): Promise<Errors | undefined> {
  const response = await fetch(t.server!.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(payload),
  });
  const text = await response.text();
  const data = text.split("\n").find((line) => line.startsWith("data: {"));
  return (JSON.parse(data!.slice("data: ".length)) as { errors?: Errors }).errors;
}

/** How many requests /metrics counts as refused for `reason`. */
async function rejected(reason: string): Promise<number> {
  const metrics = await (await fetch(new URL("/metrics", t.server!.url))).text();
  const line = metrics.split("\n").find((l) => l.startsWith(`dossier_graphql_rejected_total{reason="${reason}"} `));
  return Number(line?.split(" ")[1] ?? 0);
}

const costlyMessage = (cost: number) =>
  `The query asks for ${cost} field values at the page sizes it passes (or the lists' default pages); at most ${DEFAULT_QUERY_LIMITS.maxCost} are allowed. Ask for smaller pages, or fewer lists inside lists.`;

describe("graphql-ws subscriptions are held to the cost limit", () => {
  it("workspaceEvents: a costly selection is refused with QUERY_TOO_COSTLY, as over SSE, counted once; the same document with small pages streams, shared", async () => {
    const workspace = await createWorkspace(t.client, "Watched");
    let version = 1;
    const updateGoal = () =>
      t.client.request(UpdateGoalDocument, { input: { workspaceId: workspace.id, statement: `Goal ${version + 1}`, expectedVersion: version++ } });
    const costly = { query: WORKSPACE_EVENTS, variables: { id: workspace.id, n: 100 } };
    const sse = await overSse(costly);
    expect(sse).toEqual([{ message: costlyMessage(102_022), extensions: { code: "QUERY_TOO_COSTLY" } }]);

    const before = await rejected("QUERY_TOO_COSTLY");
    const answer = await firstAnswer(costly, updateGoal);
    expect(answer).toEqual({ errors: sse });
    expect(await rejected("QUERY_TOO_COSTLY")).toBe(before + 1);

    // Two cheap subscribers of one document: one execution for the update, both hear it.
    const cheap = { query: WORKSPACE_EVENTS, variables: { id: workspace.id, n: 1 } };
    const executions = t.server!.sharedSubscriptionExecutions();
    const answers = await firstAnswer(cheap, async () => {
      const other = await firstAnswer(cheap, updateGoal);
      expect(other.next?.data).toMatchObject({ workspaceEvents: { kind: "GOAL_UPDATED", r0: null } });
    });
    expect(answers.next?.data).toMatchObject({ workspaceEvents: { kind: "GOAL_UPDATED", r0: null } });
    expect(answers.next?.errors).toBeUndefined();
    expect(t.server!.sharedSubscriptionExecutions() - executions).toBe(1);
    expect(await rejected("QUERY_TOO_COSTLY")).toBe(before + 1);
  });

  it("traceUpdates: a costly selection is refused with QUERY_TOO_COSTLY, as over SSE, before its replay (PAGE_TOO_LARGE too); the same document with small pages streams", async () => {
    const { run } = await admit(t.client, { question: "Watched closely" });
    const recorder = new PrismaTraceRecorder({ prisma: t.app.db.prisma, events: t.app.events });
    const traceId = await recorder.traceFor(idOfType(run.id, "Run")!);
    const root = await recorder.startSpan({ traceId, kind: "RUN", name: "watched" });
    const costly = { query: TRACE_UPDATES, variables: { runId: run.id, n: 100 } };
    const sse = await overSse(costly);
    expect(sse).toEqual([{ message: costlyMessage(152_518), extensions: { code: "QUERY_TOO_COSTLY" } }]);

    const before = await rejected("QUERY_TOO_COSTLY");
    const event = () => recorder.event(root, "THINKING", "a thought");
    expect(await firstAnswer(costly, event)).toEqual({ errors: sse });
    expect(await rejected("QUERY_TOO_COSTLY")).toBe(before + 1);

    // A page over MAX_PAGE_SIZE: PAGE_TOO_LARGE, as over SSE.
    const tooLarge = { query: TRACE_UPDATES, variables: { runId: run.id, n: 1_000 } };
    const sseTooLarge = await overSse(tooLarge);
    expect(sseTooLarge?.map((error) => error.extensions?.code)).toEqual(["PAGE_TOO_LARGE"]);
    expect(await firstAnswer(tooLarge, event)).toEqual({ errors: sseTooLarge });

    const cheap = await firstAnswer({ query: TRACE_UPDATES, variables: { runId: run.id, n: 1 } }, event);
    expect(cheap.next?.errors).toBeUndefined();
    expect(cheap.next?.data).toMatchObject({ traceUpdates: { seq: "1", kind: "SPAN_STARTED", s0: { scores: { edges: [] } } } });
  });
});
