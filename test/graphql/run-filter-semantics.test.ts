// Filtered run lists as a dashboard reads them, on both databases: every RunFilter field alone
// and combined, in every order (newest, oldest, most expensive first with ties by id across page
// boundaries), paged through with `after`, counted by runsCount and totalCount;
// another principal's runs (with the same tags and metadata) never listed or counted; an access
// token granted one workspace sees only that workspace's runs; pages stay stable while runs
// are admitted between them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CancelRunDocument, RunListDocument, type RunListQuery, type RunFilter, RunsCountDocument } from "../../sdk/generated/graphql.js";
import type { DossierClient } from "../../sdk/client.js";
import { toDecimal } from "../../src/domain/costs/pricing.js";
import { decodeGlobalId } from "../../src/domain/global-id.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Seeded = {
  id: string;
  workspaceId: string | null;
  conversationId: string;
  status: string;
  tags: string[];
  metadata: Record<string, string>;
  agent: string;
  createdAt: number;
  cost: string;
};

type Order = "CREATED_AT_DESC" | "CREATED_AT_ASC" | "COST_DESC";

/** The runs in COST_DESC order as the API defines it: cost descending, then database id descending. */
const byCostDesc = (list: Seeded[]) =>
  [...list].sort((a, b) => toDecimal(b.cost).comparedTo(toDecimal(a.cost)) || (dbId(b) < dbId(a) ? -1 : dbId(b) > dbId(a) ? 1 : 0));
const dbId = (run: Seeded) => decodeGlobalId(run.id)!.id;

/** Every run the filter lists, paging `first` at a time, in `orderBy`. */
async function pageThrough(client: DossierClient, filter: RunFilter, orderBy: Order, first = 2) {
  const ids: string[] = [];
  let after: string | null = null;
  let totalCount = -1;
  for (let page = 0; page < 50; page += 1) {
    const list: RunListQuery["runs"] = (await client.request(RunListDocument, { filter, orderBy, first, after })).runs;
    totalCount = list.totalCount;
    ids.push(...list.edges.map((edge) => edge.node.id));
    if (!list.pageInfo.hasNextPage) break;
    after = list.pageInfo.endCursor;
  }
  return { ids, totalCount };
}

describe.each(backends)("filtered run lists on %s", (backend) => {
  let t: TestApp;
  let mine: DossierClient;
  let theirs: DossierClient;
  let key: string;
  const runs: Seeded[] = [];
  let ws: [string, string];

  beforeAll(async () => {
    t = await startTestApp(backend, { authRequired: true, agents: [{ name: "analyst", systemPrompt: "You compare figures." }] });
    key = await t.createPrincipal("Dashboard team");
    mine = t.as(key);
    theirs = t.as(await t.createPrincipal("Another team"));
    ws = [(await createWorkspace(mine)).id, (await createWorkspace(mine)).id];
    // Costs tie (0.25 three times, 1.5 twice) so that COST_DESC pages of two split ties by id.
    const plan: { workspaceId: string | null; tags: string[]; metadata: Record<string, string>; agent: string; cancel?: boolean; cost: string }[] = [
      { workspaceId: ws[0], tags: ["urgent", "billing"], metadata: { ticket: "T-1", team: "blue" }, agent: "researcher", cost: "0.25" },
      { workspaceId: ws[0], tags: ["billing"], metadata: { ticket: "T-2", team: "blue" }, agent: "analyst", cost: "0" },
      { workspaceId: ws[1], tags: ["urgent"], metadata: { ticket: "T-3", team: "red" }, agent: "researcher", cost: "1.5" },
      { workspaceId: null, tags: [], metadata: {}, agent: "researcher", cost: "0.25" },
      { workspaceId: ws[1], tags: ["support", "urgent"], metadata: { team: "red" }, agent: "analyst", cancel: true, cost: "0.0000000001" },
      { workspaceId: null, tags: ["billing", "support"], metadata: { ticket: "T-1" }, agent: "researcher", cancel: true, cost: "1.5" },
      { workspaceId: ws[0], tags: ["urgent"], metadata: { ticket: "T-4", team: "blue" }, agent: "researcher", cost: "0.25" },
    ];
    for (const [i, p] of plan.entries()) {
      const { run } = await admit(mine, { workspaceId: p.workspaceId, question: `q${i}`, tags: p.tags, metadata: p.metadata, agent: p.agent });
      if (p.cancel) expectType((await mine.request(CancelRunDocument, { input: { runId: run.id } })).cancelRun, "CancelRunSuccess");
      // What its model calls would have added (the column the trace recorder adds each span's cost to).
      await t.app.db.prisma.run.update({ where: { id: decodeGlobalId(run.id)!.id }, data: { cost: p.cost } });
      runs.push({
        id: run.id,
        workspaceId: p.workspaceId,
        conversationId: run.conversation.id,
        status: p.cancel ? "CANCELLED" : "QUEUED",
        tags: p.tags,
        metadata: p.metadata,
        agent: p.agent,
        createdAt: Date.parse(run.createdAt),
        cost: p.cost,
      });
    }
    // The other principal's runs carry the same labels: no filter may reach them.
    for (const tags of [["urgent", "billing"], ["support"]]) {
      const { run } = await admit(theirs, { question: "theirs", tags, metadata: { ticket: "T-1", team: "blue" } });
      await t.app.db.prisma.run.update({ where: { id: decodeGlobalId(run.id)!.id }, data: { cost: "9" } });
    }
  }, 120_000);
  afterAll(() => t?.close());

  const middle = () => runs[3]!.createdAt;
  const cases: [string, () => RunFilter, (run: Seeded) => boolean][] = [
    ["no filter", () => ({}), () => true],
    ["workspaceId", () => ({ workspaceId: ws[0] }), (r) => r.workspaceId === ws[0]],
    ["conversationId", () => ({ conversationId: runs[2]!.conversationId }), (r) => r === runs[2]],
    ["status", () => ({ status: ["CANCELLED"] }), (r) => r.status === "CANCELLED"],
    ["status, two of them", () => ({ status: ["CANCELLED", "QUEUED"] }), () => true],
    ["tagsAll", () => ({ tagsAll: ["urgent", "billing"] }), (r) => r.tags.includes("urgent") && r.tags.includes("billing")],
    ["tagsAny", () => ({ tagsAny: ["support", "billing"] }), (r) => r.tags.includes("support") || r.tags.includes("billing")],
    ["metadata, one key", () => ({ metadata: { team: "blue" } }), (r) => r.metadata.team === "blue"],
    ["metadata, two keys", () => ({ metadata: { team: "blue", ticket: "T-1" } }), (r) => r.metadata.team === "blue" && r.metadata.ticket === "T-1"],
    ["agent", () => ({ agent: "analyst" }), (r) => r.agent === "analyst"],
    ["createdAfter", () => ({ createdAfter: new Date(middle()).toISOString() }), (r) => r.createdAt > middle()],
    ["createdBefore", () => ({ createdBefore: new Date(middle()).toISOString() }), (r) => r.createdAt < middle()],
    [
      "workspace, status and tagsAny",
      () => ({ workspaceId: ws[1], status: ["CANCELLED"], tagsAny: ["urgent"] }),
      (r) => r.workspaceId === ws[1] && r.status === "CANCELLED" && r.tags.includes("urgent"),
    ],
    [
      "tagsAll, tagsAny, metadata and agent",
      () => ({ tagsAll: ["urgent"], tagsAny: ["billing", "support"], metadata: { team: "blue" }, agent: "researcher" }),
      (r) => r.tags.includes("urgent") && (r.tags.includes("billing") || r.tags.includes("support")) && r.metadata.team === "blue" && r.agent === "researcher",
    ],
    [
      "a time window and a status",
      () => ({ createdAfter: new Date(runs[0]!.createdAt).toISOString(), createdBefore: new Date(runs[6]!.createdAt).toISOString(), status: ["QUEUED"] }),
      (r) => r.createdAt > runs[0]!.createdAt && r.createdAt < runs[6]!.createdAt && r.status === "QUEUED",
    ],
    ["costAbove", () => ({ costAbove: "0.25" }), (r) => toDecimal(r.cost).greaterThan("0.25")],
    ["costAbove 0: every run that cost anything", () => ({ costAbove: "0" }), (r) => toDecimal(r.cost).greaterThan(0)],
    ["costAbove, just below a cost", () => ({ costAbove: "0.2499999999" }), (r) => toDecimal(r.cost).greaterThanOrEqualTo("0.25")],
    [
      "costAbove with a workspace and tags",
      () => ({ costAbove: "0.1", workspaceId: ws[0], tagsAny: ["urgent"] }),
      (r) => toDecimal(r.cost).greaterThan("0.1") && r.workspaceId === ws[0] && r.tags.includes("urgent"),
    ],
    ["nothing matches", () => ({ tagsAll: ["urgent"], metadata: { team: "green" } }), () => false],
  ];

  it.each(cases)("%s: every order, page by page, counted", async (_name, filterOf, expected) => {
    const filter = filterOf();
    const want = runs.filter(expected).map((r) => r.id);
    const newest = await pageThrough(mine, filter, "CREATED_AT_DESC");
    const oldest = await pageThrough(mine, filter, "CREATED_AT_ASC");
    expect(oldest.ids).toEqual(want);
    expect(newest.ids).toEqual([...want].reverse());
    // Most expensive first, ties by id, pages of two and of one (every tie split by a page boundary).
    const costliest = byCostDesc(runs.filter(expected)).map((r) => r.id);
    expect((await pageThrough(mine, filter, "COST_DESC")).ids).toEqual(costliest);
    expect((await pageThrough(mine, filter, "COST_DESC", 1)).ids).toEqual(costliest);
    expect(newest.totalCount).toBe(want.length);
    expect((await mine.request(RunsCountDocument, { filter })).runsCount).toBe(want.length);
  });

  it("never lists or counts another principal's runs", async () => {
    expect((await theirs.request(RunsCountDocument, { filter: { tagsAny: ["urgent", "support"] } })).runsCount).toBe(2);
    expect((await theirs.request(RunsCountDocument, { filter: { workspaceId: ws[0] } })).runsCount).toBe(0);
    expect((await pageThrough(theirs, { metadata: { ticket: "T-1" } }, "CREATED_AT_ASC")).ids).toHaveLength(2);
    expect((await mine.request(RunsCountDocument, {})).runsCount).toBe(runs.length);
  });

  it("lists only what an access token may read, whatever the filter asks", async () => {
    const mint = await t.app.yoga.fetch(
      new Request("http://dossier.test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify({
          query:
            "mutation($w: ID!) { createAccessToken(input: { grants: [{ resourceId: $w, operations: [READ] }] }) { ... on CreateAccessTokenSuccess { token } } }",
          variables: { w: ws[0] },
        }),
      }),
    );
    const token = ((await mint.json()) as { data: { createAccessToken: { token: string } } }).data.createAccessToken.token;
    const viaToken = t.as(token);
    const inGranted = runs.filter((r) => r.workspaceId === ws[0]).map((r) => r.id);
    expect((await pageThrough(viaToken, {}, "CREATED_AT_ASC")).ids).toEqual(inGranted);
    expect((await viaToken.request(RunsCountDocument, { filter: { tagsAny: ["urgent"] } })).runsCount).toBe(2);
    expect((await viaToken.request(RunsCountDocument, { filter: { workspaceId: ws[1] } })).runsCount).toBe(0);
  });

  it("shows each run's cost in the list, and pages backwards through COST_DESC", async () => {
    const { runs: list } = await mine.request(RunListDocument, { orderBy: "COST_DESC", first: 3 });
    expect(list.edges.map((edge) => edge.node.cost.amount)).toEqual(["1.5", "1.5", "0.25"]);
    const back = await t.app.yoga.fetch(
      new Request("http://dossier.test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify({
          query: "query($before: String) { runs(orderBy: COST_DESC, last: 2, before: $before) { edges { node { id } } } }",
          variables: { before: list.pageInfo.endCursor },
        }),
      }),
    );
    const backIds = ((await back.json()) as { data: { runs: { edges: { node: { id: string } }[] } } }).data.runs.edges.map((edge) => edge.node.id);
    expect(backIds).toEqual(
      byCostDesc(runs)
        .slice(0, 2)
        .map((r) => r.id),
    );
  });

  it("refuses a malformed filter with the field it names, and finds nothing for an id of another type", async () => {
    await expect(mine.request(RunsCountDocument, { filter: { costAbove: "-1" } })).rejects.toThrow(/filter\.costAbove/);
    await expect(mine.request(RunsCountDocument, { filter: { tagsAll: ["\u200b"] } })).rejects.toThrow(/filter\.tagsAll\.0/);
    await expect(mine.request(RunsCountDocument, { filter: { metadata: { team: 1 } as never } })).rejects.toThrow(/filter\.metadata\.team/);
    expect((await mine.request(RunsCountDocument, { filter: { workspaceId: runs[0]!.id } })).runsCount).toBe(0);
  });

  it("pages stay stable while runs are admitted between them", async () => {
    const filter = { tagsAny: ["urgent"] };
    const before = runs.filter((r) => r.tags.includes("urgent")).map((r) => r.id);
    const walk = async (orderBy: "CREATED_AT_DESC" | "CREATED_AT_ASC", first: string | null) => {
      const seen: string[] = [];
      const added: string[] = [];
      let after = first;
      for (let page = 0; page < 20; page += 1) {
        // Each page is read while two more matching runs are admitted.
        const [{ runs: list }, ...admitted] = await Promise.all([
          mine.request(RunListDocument, { filter, orderBy, first: 1, after }),
          admit(mine, { question: `new ${orderBy} ${page}a`, tags: ["urgent"] }),
          admit(mine, { question: `new ${orderBy} ${page}b`, tags: ["urgent"] }),
        ]);
        added.push(...admitted.map((a) => a.run.id));
        seen.push(...list.edges.map((edge) => edge.node.id));
        if (!list.pageInfo.hasNextPage) break;
        after = list.pageInfo.endCursor;
      }
      return { seen, added };
    };
    // Newest first, from a first page read before: the runs admitted meanwhile are newer than
    // every page still to come, so the walk lists exactly the runs that were there, once each.
    const { runs: firstPage } = await mine.request(RunListDocument, { filter, orderBy: "CREATED_AT_DESC", first: 1 });
    expect(firstPage.edges[0]!.node.id).toBe(before.at(-1));
    const newest = await walk("CREATED_AT_DESC", firstPage.pageInfo.endCursor);
    expect([firstPage.edges[0]!.node.id, ...newest.seen]).toEqual([...before].reverse());
    // Oldest first: the runs that were there, in order (the seeded ones, then those the first walk
    // admitted), then some of those admitted during this walk, each once.
    const oldest = await walk("CREATED_AT_ASC", null);
    const there = before.length + newest.added.length;
    expect(oldest.seen.slice(0, before.length)).toEqual(before);
    expect(new Set(oldest.seen.slice(before.length, there))).toEqual(new Set(newest.added));
    expect(oldest.seen.slice(there).every((id) => oldest.added.includes(id))).toBe(true);
    expect(new Set(oldest.seen).size).toBe(oldest.seen.length);
  });
});
