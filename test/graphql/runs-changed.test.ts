// runsChanged (issue 39): a live run list over graphql-ws. Runs are claimed, use tokens and settle
// through the run state the workers use (no model, no timing): a filtered list hears them enter,
// change and leave in commit order, resumes with afterSeq without a gap, is told to resync once
// the bounded log no longer holds its position, and never shows another principal's runs nor,
// to an access token, a run outside its grants.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import {
  CancelRunDocument,
  CreateAccessTokenDocument,
  CreateApiKeyDocument,
  LinkToWorkspaceDocument,
  RunsChangedDocument,
  type RunsChangedSubscription,
  type RunsChangedSubscriptionVariables,
} from "../../sdk/generated/graphql.js";
import { decodeGlobalId } from "../../src/domain/global-id.js";
import { chargeRunIn } from "../../src/domain/runs/run-cost.js";
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import { publishRunListChange, SUBSCRIBER_LIMIT } from "../../src/events/topics.js";
import { silentLogger } from "../../src/logger.js";
import { settleOutcome } from "../../src/runtime/attempt/settle-outcome.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor, withTimeout } from "../support/wait.js";

type Update = RunsChangedSubscription["runsChanged"];
const rawId = (globalId: string) => decodeGlobalId(globalId)!.id;

describe.each(backends)("runsChanged on %s", (backend) => {
  let t: TestApp;
  let runs: PrismaRunState;
  let alice: DossierClient;
  let aliceKey: string;
  let bob: DossierClient;
  beforeAll(async () => {
    t = await startTestApp(backend, { listen: true, authRequired: true });
    runs = new PrismaRunState({ prisma: t.app.db.prisma, events: t.app.events, trace: { announce: () => undefined, exportEnded: () => undefined } });
    aliceKey = await t.createPrincipal("Alice");
    alice = t.as(aliceKey);
    bob = t.as(await t.createPrincipal("Bob"));
  });
  afterAll(async () => t?.close());

  const claimant = {
    workerId: "list-worker",
    leaseMs: 60_000,
    leaseMarginMs: 1_000,
    maxRunningPerPrincipal: 100,
    liveness: async () => true,
    describeRun: () => ({ name: "run", attributes: {} }),
  };

  /** Claims the run (RUNNING) and returns how to use tokens and settle it, as its worker does. */
  async function start(runId: string) {
    const claimed = await runs.claim(claimant, rawId(runId));
    if (!claimed) throw new Error("the run was not claimable");
    const fence = runs.fence({ runId: claimed.run.id, attempt: claimed.number, workerId: claimant.workerId }, () => undefined);
    return {
      useTokens: () => runs.addTokens(fence.write, claimed.run.id, { input: 10, output: 5 }),
      finish: () => settleOutcome({ runs, steps: [], logger: silentLogger }, claimed, fence, { type: "final", answer: "done" }),
    };
  }

  /** A subscription known to be listening on the server; `take(n)` reads its next n updates. */
  /**
   * Subscribes and, unless `ends` (a stream that ends at its first update, as a resync does: its
   * listener may come and go between two looks), waits until the server listens for changes.
   */
  async function watch(key: string, variables: RunsChangedSubscriptionVariables = {}, { ends = false } = {}) {
    const iterator = t.connect(key).subscribe(RunsChangedDocument, variables);
    const listening = t.listeners();
    let pending = iterator.next();
    if (!ends) await waitFor(() => t.listeners() > listening);
    return {
      async take(count: number): Promise<Update[]> {
        const updates: Update[] = [];
        while (updates.length < count) {
          const next = await withTimeout(pending, 10_000);
          if (next.done) break;
          updates.push(next.value.runsChanged);
          pending = iterator.next();
        }
        return updates;
      },
      /**
       * Leaves, and waits until the server has let go of the subscription (not for an access
       * token's: its expiry guard lets go only at the stream's next update).
       */
      async close({ wait = true } = {}) {
        const before = t.listeners();
        await iterator.return?.();
        if (wait) await waitFor(() => t.listeners() < before);
      },
    };
  }

  const seen = (updates: Update[]) => updates.map((u) => `${u.kind} ${u.run?.question ?? ""}`);

  it("hears runs start RUNNING, use tokens and end, in order, and resumes with afterSeq without a gap", async () => {
    const running = await watch(aliceKey, { filter: { status: ["RUNNING"] } });
    const everything = await watch(aliceKey);
    const first = (await admit(alice, { question: "first" })).run;
    const second = (await admit(alice, { question: "second" })).run;
    const bobs = (await admit(bob, { question: "bob's" })).run;
    const a = await start(first.id);
    await (await start(bobs.id)).finish();
    await a.useTokens();
    const b = await start(second.id);
    await a.finish();
    await alice.request(CancelRunDocument, { input: { runId: second.id } });

    const updates = await running.take(5);
    expect(seen(updates)).toEqual(["ADDED first", "UPDATED first", "ADDED second", "REMOVED first", "REMOVED second"]);
    const seqs = updates.map((u) => Number(u.seq));
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(updates[1]!.run?.tokensUsed).toBe(15);
    // Without a filter: admissions too, and never Bob's run.
    const all = await everything.take(7);
    expect(seen(all)).toEqual(["ADDED first", "ADDED second", "UPDATED first", "UPDATED first", "UPDATED second", "UPDATED first", "UPDATED second"]);
    await running.close();
    await everything.close();

    // Resumed after the first update, a subscriber gets the rest from the log, then live ones.
    const resumed = await watch(aliceKey, { filter: { status: ["RUNNING"] }, afterSeq: updates[0]!.seq });
    expect(seen(await resumed.take(4))).toEqual(["UPDATED first", "ADDED second", "REMOVED first", "REMOVED second"]);
    const third = (await admit(alice, { question: "third" })).run;
    await (await start(third.id)).useTokens();
    expect(seen(await resumed.take(1))).toEqual(["ADDED third"]);
    void b;
    await resumed.close();
  });

  // PostgreSQL only: PGlite takes half a minute to log 10,100 changes.
  it.runIf(backend === "postgres")("tells a subscriber whose position the log no longer keeps to resync, from a seq it can resume at", async () => {
    const carol = await t.createPrincipal("Carol");
    const { run } = await admit(t.as(carol), { question: "busy" });
    const early = await watch(carol, { afterSeq: "0" });
    expect(seen(await early.take(1))).toEqual(["ADDED busy"]);
    await early.close();
    // 10,100 more changes (runs copied in one statement): the log keeps Carol's latest 10,000.
    await t.app.db.prisma.$executeRawUnsafe(
      `INSERT INTO run (id, owner_id, conversation_id, agent, question, max_turns, token_budget, deadline_seconds, deadline_at, configuration, status)
       SELECT 'copy-' || i, owner_id, conversation_id, agent, 'copy', max_turns, token_budget, deadline_seconds, deadline_at, configuration, 'CANCELLED'
         FROM run, generate_series(1, 10100) AS i WHERE id = $1`,
      rawId(run.id),
    );
    const late = await watch(carol, { afterSeq: "1" }, { ends: true });
    const [resync] = await late.take(2);
    expect(resync).toMatchObject({ kind: "RESYNC_REQUIRED", run: null, seq: "10101" });
    const again = await watch(carol, { afterSeq: resync!.seq });
    await alice.request(CancelRunDocument, { input: { runId: run.id } }); // Alice's: not Carol's run, nothing happens
    await t.as(carol).request(CancelRunDocument, { input: { runId: run.id } });
    expect(seen(await again.take(1))).toEqual(["UPDATED busy"]);
    await again.close();
  });

  it("shows an access token only the runs of its workspace", async () => {
    const workspace = await createWorkspace(alice);
    const granted = await alice.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: workspace.id, operations: ["READ", "SUBSCRIBE"] }] } });
    const token = expectType(granted.createAccessToken, "CreateAccessTokenSuccess").token;
    const list = await watch(token, { filter: { status: ["RUNNING"] } });
    const outside = (await admit(alice, { question: "outside" })).run;
    const inside = (await admit(alice, { question: "inside", workspaceId: workspace.id })).run;
    await (await start(outside.id)).finish();
    await (await start(inside.id)).finish();
    expect(seen(await list.take(2))).toEqual(["ADDED inside", "REMOVED inside"]);
    await list.close({ wait: false });
  });

  it("shows an access token the runs linked to its workspace, as node(id) does, and no other", async () => {
    const workspace = await createWorkspace(alice);
    const granted = await alice.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: workspace.id, operations: ["READ", "SUBSCRIBE"] }] } });
    const token = expectType(granted.createAccessToken, "CreateAccessTokenSuccess").token;
    const linked = (await admit(alice, { question: "linked" })).run;
    const elsewhere = (await admit(alice, { question: "elsewhere" })).run;
    expectType(
      (await alice.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: linked.id } })).linkToWorkspace,
      "LinkToWorkspaceSuccess",
    );
    const list = await watch(token, { filter: { status: ["RUNNING"] } });
    await (await start(elsewhere.id)).finish();
    await (await start(linked.id)).finish();
    const inside = (await admit(alice, { question: "inside", workspaceId: workspace.id })).run;
    await (await start(inside.id)).finish();
    expect(seen(await list.take(4))).toEqual(["ADDED linked", "REMOVED linked", "ADDED inside", "REMOVED inside"]);
    await list.close({ wait: false });
  });

  it("is refused to a key without SUBSCRIBE", async () => {
    const created = await alice.request(CreateApiKeyDocument, { input: { name: "reader", scopes: ["READ"] } });
    const reader = expectType(created.createApiKey, "CreateApiKeySuccess").secret;
    const stream = t.connect(reader).subscribe(RunsChangedDocument, {});
    await expect(withTimeout(stream.next(), 10_000)).rejects.toThrow(/may not SUBSCRIBE/);
  });

  it("follows a filter on tags: the run enters when tagged, changes, and leaves when untagged", async () => {
    // Tags are written here as updateRunTags will write them (the run row, then the announcement).
    const { prisma } = t.app.db;
    const list = await watch(aliceKey, { filter: { tagsAny: ["triage"] } });
    const { run } = await admit(alice, { question: "tagged later" });
    const owner = (await prisma.run.findUniqueOrThrow({ where: { id: rawId(run.id) } })).ownerId;
    const tag = async (tags: string[]) => {
      await prisma.run.update({ where: { id: rawId(run.id) }, data: { tags } });
      publishRunListChange(t.app.events, owner);
    };
    await tag(["triage"]);
    await tag(["triage", "urgent"]);
    await tag(["urgent"]);
    expect(seen(await list.take(3))).toEqual(["ADDED tagged later", "UPDATED tagged later", "REMOVED tagged later"]);
    await list.close();
  });

  it("still hears its runs after a burst of more announcements than the bus keeps for one subscriber", async () => {
    const { prisma } = t.app.db;
    const list = await watch(aliceKey, { filter: { tagsAny: ["burst"] } });
    const { run } = await admit(alice, { question: "after a burst" });
    const owner = (await prisma.run.findUniqueOrThrow({ where: { id: rawId(run.id) } })).ownerId;
    // In one turn: the subscription takes none of them before the last.
    for (let i = 0; i < SUBSCRIBER_LIMIT + 100; i += 1) publishRunListChange(t.app.events, owner);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await prisma.run.update({ where: { id: rawId(run.id) }, data: { tags: ["burst"] } });
    publishRunListChange(t.app.events, owner);
    expect(seen(await list.take(1))).toEqual(["ADDED after a burst"]);
    await list.close();
  });

  it("follows a run's cost: each model call's charge is an update, and the run enters a costAbove list once it costs more", async () => {
    const { prisma } = t.app.db;
    const costly = await watch(aliceKey, { filter: { costAbove: "0.01" } });
    const everything = await watch(aliceKey);
    const { run } = await admit(alice, { question: "spends" });
    // Charged as the trace recorder charges a model span's cost to its run (then announces it).
    const charge = async (amount: string | null) => {
      const owner = await prisma.$transaction((tx) => chargeRunIn(tx, rawId(run.id), { amount }));
      if (owner) publishRunListChange(t.app.events, owner);
      return owner;
    };
    await charge("0.006");
    await charge(null); // an unpriced call: the run's cost says it is incomplete
    await charge("0"); // a call that cost nothing changes nothing
    await charge("0.006");
    await charge("0.0001");
    expect(seen(await costly.take(2))).toEqual(["ADDED spends", "UPDATED spends"]);
    const all = await everything.take(5);
    expect(seen(all)).toEqual(["ADDED spends", "UPDATED spends", "UPDATED spends", "UPDATED spends", "UPDATED spends"]);
    expect(all.at(-1)!.run).toMatchObject({ cost: { amount: "0.0121", currency: "USD" }, costUnpriced: true });
    await costly.close();
    await everything.close();
  });
});
