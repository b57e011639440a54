// W2: a goal is a chain of immutable versions, updated by compare-and-swap.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GoalVersionsDocument, UpdateGoalDocument, type UpdateGoalMutation, WorkspaceDocument } from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { createWorkspace as createWorkspaceFixture } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("goal versions on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(async () => t?.close());

  const createWorkspace = (goal?: string) => createWorkspaceFixture(t.client, goal);

  const updateGoal = (workspaceId: string, statement: string, expectedVersion: number) =>
    t.client.request(UpdateGoalDocument, { input: { workspaceId, statement, expectedVersion } }).then((r) => r.updateGoal);

  async function allVersions(workspaceId: string) {
    const result = await t.client.request(GoalVersionsDocument, { workspaceId, first: 100 });
    return result.workspace?.goalVersions.edges.map((edge) => edge.node) ?? [];
  }

  it("starts at version 1 and adds one version per accepted update, keeping every earlier version", async () => {
    const workspace = await createWorkspace("first goal");
    expect(workspace.goal).toMatchObject({ version: 1, statement: "first goal" });

    const second = await updateGoal(workspace.id, "second goal", 1);
    expect(second).toMatchObject({ __typename: "UpdateGoalSuccess", goal: { version: 2, statement: "second goal" } });
    const third = await updateGoal(workspace.id, "third goal", 2);
    expect(third).toMatchObject({ __typename: "UpdateGoalSuccess", workspace: { goal: { version: 3 } } });

    const read = await t.client.request(WorkspaceDocument, { id: workspace.id });
    expect(read.workspace?.goal).toMatchObject({ version: 3, statement: "third goal" });
    expect((await allVersions(workspace.id)).map((v) => [v.version, v.statement])).toEqual([
      [3, "third goal"],
      [2, "second goal"],
      [1, "first goal"],
    ]);
  });

  it("rejects a stale update with the current version and writes nothing", async () => {
    const workspace = await createWorkspace("v1");
    await updateGoal(workspace.id, "v2", 1);
    const stale = await updateGoal(workspace.id, "based on v1", 1);
    expect(stale).toMatchObject({ __typename: "StaleVersionError", currentVersion: 2, expectedVersion: 1 });
    const future = await updateGoal(workspace.id, "from the future", 7);
    expect(future).toMatchObject({ __typename: "StaleVersionError", currentVersion: 2 });
    expect((await allVersions(workspace.id)).map((v) => v.statement)).toEqual(["v2", "v1"]);
  });

  it("lets exactly one of twenty concurrent updates with the same expected version win", async () => {
    const workspace = await createWorkspace("contested");
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => updateGoal(workspace.id, `writer ${i}`, 1)));
    const winners = results.filter((r) => r.__typename === "UpdateGoalSuccess");
    const losers = results.filter(
      (r): r is Extract<UpdateGoalMutation["updateGoal"], { __typename: "StaleVersionError" }> => r.__typename === "StaleVersionError",
    );
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(19);
    expect(losers.every((loser) => loser.currentVersion === 2)).toBe(true);
    expect((await allVersions(workspace.id)).map((v) => v.version)).toEqual([2, 1]);
  });

  it("numbers versions 1..n without gaps or duplicates when twenty writers retry until each succeeds", async () => {
    const workspace = await createWorkspace("v1");
    const writer = async (i: number) => {
      for (;;) {
        const read = await t.client.request(WorkspaceDocument, { id: workspace.id });
        const current = read.workspace?.goal.version ?? 0;
        const result = await updateGoal(workspace.id, `writer ${i}`, current);
        if (result.__typename === "UpdateGoalSuccess") return result.goal.version;
        expect(result.__typename).toBe("StaleVersionError");
      }
    };
    const won = await Promise.all(Array.from({ length: 20 }, (_, i) => writer(i)));
    expect([...won].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
    const versions = (await allVersions(workspace.id)).map((v) => v.version);
    expect(versions).toEqual(Array.from({ length: 21 }, (_, i) => 21 - i));
    const statements = new Set((await allVersions(workspace.id)).map((v) => v.statement));
    expect(statements.size).toBe(21);
  });

  it("pages through goal versions newest first", async () => {
    const workspace = await createWorkspace("g1");
    for (let v = 1; v < 5; v += 1) await updateGoal(workspace.id, `g${v + 1}`, v);
    const first = await t.client.request(GoalVersionsDocument, { workspaceId: workspace.id, first: 2 });
    const page1 = first.workspace!.goalVersions;
    expect(page1.edges.map((e) => e.node.version)).toEqual([5, 4]);
    expect(page1.pageInfo.hasNextPage).toBe(true);
    const next = await t.client.request(GoalVersionsDocument, {
      workspaceId: workspace.id,
      first: 10,
      after: page1.pageInfo.endCursor,
    });
    expect(next.workspace!.goalVersions.edges.map((e) => e.node.version)).toEqual([3, 2, 1]);
    expect(next.workspace!.goalVersions.pageInfo.hasNextPage).toBe(false);
  });
});
