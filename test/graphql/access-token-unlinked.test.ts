// A token reaches a run through a workspace's link only while the link is there: once the team
// unlinks the run (or deletes the workspace), node(id) answers null, and the token's open
// traceUpdates, runOutput and runEvents of the run end at once with GRANT_WITHDRAWN (over SSE: the
// error, then the stream's "complete"); nothing the run does afterwards reaches them. A token
// granted the run itself keeps watching it to the end.
// Archiving the workspace withdraws nothing: it keeps its links, and what they reach stays readable
// (spec W14: archiving cancels nothing, and restoring undoes it), so node(id) still answers the
// run and the token's streams of it run on to the run's end.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, it } from "vitest";
import { DossierRequestError } from "../../sdk/client.js";
import {
  ArchiveWorkspaceDocument,
  CreateAccessTokenDocument,
  DeleteWorkspaceDocument,
  LinkToWorkspaceDocument,
  NodeDocument,
  RunEventsDocument,
  RunOutputDocument,
  TraceUpdatesDocument,
  UnlinkFromWorkspaceDocument,
} from "../../sdk/generated/graphql.js";
import { decodeGlobalId } from "../../src/domain/global-id.js";
import { startHeldModel } from "../support/held-model.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { closedAfterEach } from "../support/per-test.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const closing = closedAfterEach();

/** What a stream delivered, in order: each event's label, then "done" or the error code it ended with. */
function record<T>(events: AsyncIterable<T>, label: (event: T) => string): string[] {
  const seen: string[] = [];
  void (async () => {
    try {
      for await (const event of events) seen.push(label(event));
      seen.push("done");
    } catch (error) {
      seen.push(error instanceof DossierRequestError ? String(error.errors[0]?.extensions?.code ?? error.errors[0]?.message) : String(error));
    }
  })();
  return seen;
}

const END = new Set(["done", "GRANT_WITHDRAWN"]);
const ended = (seen: string[]) => seen.some((step) => END.has(step) || step.startsWith("Error"));
/** The trace positions a stream's events carry (a runOutput position counts as its trace position). */
const seqs = (seen: string[]) => seen.filter((step) => /^\d/.test(step)).map((step) => Number(step.split(":")[0]));

async function setUp() {
  const held = closing(await startHeldModel({ holding: 1 }));
  const sandboxDir = mkdtempSync(path.join(tmpdir(), "dossier-token-unlinked-"));
  const t: TestApp = await startTestApp("pglite", { authRequired: true, listen: true, runtime: { model: held.model, sandboxDir } });
  // Released before the app closes: a request still held holds up its close.
  closing({ close: async () => t.close() });
  closing({ close: async () => held.release() });
  const client = t.as(await t.createPrincipal("Team backend"));
  const workspace = await createWorkspace(client, "granted goal");
  const run = (await admit(client, { question: "Held while linked" })).run;
  expectType(
    (await client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: run.id } })).linkToWorkspace,
    "LinkToWorkspaceSuccess",
  );
  const mint = async (resourceId: string) =>
    expectType(
      (await client.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId, operations: ["READ", "SUBSCRIBE"] }] } })).createAccessToken,
      "CreateAccessTokenSuccess",
    ).token;
  const [viaLink, ofRun] = [await mint(workspace.id), await mint(run.id)];
  await waitUntil(() => (held.asked() === 1 ? true : undefined), 20_000, 20);
  const watch = (token: string) => {
    const socket = t.connect(token);
    return {
      trace: record(socket.subscribe(TraceUpdatesDocument, { runId: run.id }), (event) => event.traceUpdates.seq),
      output: record(socket.subscribe(RunOutputDocument, { runId: run.id }), (event) => event.runOutput.seq),
      events: record(socket.subscribe(RunEventsDocument, { runId: run.id }), (event) => event.runEvents.status),
    };
  };
  return { t, held, client, workspace, run, viaLink, ofRun, watch };
}

it("ends a token's streams of a run it reached through a link when the link is removed: nothing arrives after", async () => {
  const { t, held, client, workspace, run, viaLink, ofRun, watch } = await setUp();
  const linked = watch(viaLink);
  const granted = watch(ofRun);
  // The run's span and the model call's have started, and its first piece of output is out.
  await waitUntil(() => (linked.trace.length >= 2 && linked.output.length >= 1 && granted.trace.length >= 2 ? true : undefined), 20_000, 20);

  // What the run recorded before the unlink may still be on its way; nothing recorded after it may come.
  const recorded = await t.app.db.prisma.trace.findUniqueOrThrow({ where: { id: decodeGlobalId(run.id)!.id }, select: { lastSeq: true } });
  expectType(
    (await client.request(UnlinkFromWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: run.id } })).unlinkFromWorkspace,
    "UnlinkFromWorkspaceSuccess",
  );
  // At once, the run goes on: more spans, events and output, then its end. None of it reaches the unlinked token.
  held.release();
  expect((await t.as(viaLink).request(NodeDocument, { id: run.id })).node).toBeNull();
  expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
  await waitUntil(() => (ended(granted.trace) && ended(granted.events) && ended(linked.trace) ? true : undefined), 20_000, 20);
  // Every stream of the unlinked token has ended (on a server that lets them run on, some never do).
  await waitUntil(() => (ended(linked.output) && ended(linked.events) ? true : undefined), 2_000, 20).catch(() => undefined);
  const lastSeq = Number(recorded.lastSeq);
  expect({
    trace: [...seqs(linked.trace).filter((seq) => seq > lastSeq), linked.trace.at(-1)],
    output: [...seqs(linked.output).filter((seq) => seq > lastSeq), linked.output.at(-1)],
    events: linked.events.filter((status) => status !== "RUNNING"),
  }).toEqual({ trace: ["GRANT_WITHDRAWN"], output: ["GRANT_WITHDRAWN"], events: ["GRANT_WITHDRAWN"] });
  // The token granted the run itself watched it to its end.
  expect(Math.max(...seqs(granted.trace))).toBeGreaterThan(lastSeq);
  expect(granted.trace.at(-1)).toBe("done");
  expect(granted.events).toContain("SUCCEEDED");
});

it("ends them when the workspace that linked the run is deleted", async () => {
  const { client, workspace, viaLink, watch } = await setUp();
  const linked = watch(viaLink);
  // All three streams are open (each has delivered) before the workspace goes: one subscribed after
  // would be refused, not withdrawn.
  await waitUntil(() => (linked.trace.length >= 2 && linked.output.length >= 1 && linked.events.length >= 1 ? true : undefined), 20_000, 20);
  expectType((await client.request(DeleteWorkspaceDocument, { input: { workspaceId: workspace.id } })).deleteWorkspace, "DeleteWorkspaceSuccess");
  await waitUntil(() => (ended(linked.trace) && ended(linked.output) && ended(linked.events) ? true : undefined), 10_000, 20);
  for (const seen of Object.values(linked)) expect(seen.at(-1)).toBe("GRANT_WITHDRAWN");
});

it("keeps them open while the workspace is archived: node(id) still answers the run, and its streams run to its end", async () => {
  const { t, held, client, workspace, run, viaLink, watch } = await setUp();
  const linked = watch(viaLink);
  await waitUntil(() => (linked.trace.length >= 2 && linked.output.length >= 1 ? true : undefined), 20_000, 20);
  expectType((await client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } })).archiveWorkspace, "ArchiveWorkspaceSuccess");
  expect((await t.as(viaLink).request(NodeDocument, { id: run.id })).node).toMatchObject({ id: run.id });
  held.release();
  expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
  await waitUntil(() => (ended(linked.trace) && ended(linked.events) ? true : undefined), 20_000, 20);
  expect([linked.trace.at(-1), linked.events.includes("SUCCEEDED"), [...linked.trace, ...linked.output, ...linked.events]]).toEqual([
    "done",
    true,
    expect.not.arrayContaining(["GRANT_WITHDRAWN"]),
  ]);
});

it("ends an SSE stream of the run the same way: GRANT_WITHDRAWN, then the stream's end", async () => {
  const { t, client, workspace, run, viaLink } = await setUp();
  const listening = t.listeners();
  const query = "subscription ($runId: ID!) { runEvents(runId: $runId) { status } }";
  const response = await fetch(`${t.server!.url}?query=${encodeURIComponent(query)}&variables=${encodeURIComponent(JSON.stringify({ runId: run.id }))}`, {
    headers: { accept: "text/event-stream", authorization: `Bearer ${viaLink}` },
  });
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const text = response.text();
  // The stream listens to the run's events and to the workspace's links.
  await waitUntil(() => (t.listeners() >= listening + 2 ? true : undefined), 10_000, 20);
  expectType(
    (await client.request(UnlinkFromWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: run.id } })).unlinkFromWorkspace,
    "UnlinkFromWorkspaceSuccess",
  );
  // The stream ends by itself: its text is whole once the server has closed it.
  // Keep-alive comments (":") carry nothing.
  const events = (await text).split("\n\n").filter((event) => event.trim() !== "" && !event.startsWith(":"));
  expect(events.at(-1)).toMatch(/^event: complete/);
  const withdrawn = events.filter((event) => event.includes('"code":"GRANT_WITHDRAWN"'));
  expect(withdrawn).toHaveLength(1);
  expect(events.at(-2)).toBe(withdrawn[0]);
  // Nothing of it is left listening.
  await waitUntil(() => (t.listeners() === listening ? true : undefined), 5_000, 20);
});
