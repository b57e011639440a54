// A2: bad input gets a typed error and writes nothing; unknown ids reveal nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ArchiveWorkspaceDocument,
  CreateWorkspaceDocument,
  NodeDocument,
  UpdateGoalDocument,
  WorkspaceDocument,
  WorkspacesDocument,
} from "../../sdk/generated/graphql.js";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { backends } from "../support/databases.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("workspace input on %s", (backend) => {
  let t: TestApp;
  let workspaceId: string;
  beforeAll(async () => {
    t = await startTestApp(backend);
    const created = await t.client.request(CreateWorkspaceDocument, { input: { title: "Base", goal: "g" } });
    if (created.createWorkspace.__typename !== "CreateWorkspaceSuccess") throw new Error("setup failed");
    workspaceId = created.createWorkspace.workspace.id;
  });
  afterAll(async () => t?.close());

  const counts = async () => ({
    workspaces: await t.app.db.prisma.workspace.count(),
    goalVersions: await t.app.db.prisma.goalVersion.count(),
  });

  it.each([
    ["an empty title", { title: "", goal: "g" }, "title"],
    ["a blank title", { title: "   ", goal: "g" }, "title"],
    ["an empty goal", { title: "t", goal: "" }, "goal"],
    ["a goal over 20,000 characters", { title: "t", goal: "x".repeat(20_001) }, "goal"],
    ["a title over 200 characters", { title: "t".repeat(201), goal: "g" }, "title"],
  ])("rejects %s when creating, writing nothing", async (_name, input, field) => {
    const before = await counts();
    const result = await t.client.request(CreateWorkspaceDocument, { input });
    expect(result.createWorkspace).toMatchObject({ __typename: "ValidationError", issues: [{ field }] });
    expect(await counts()).toEqual(before);
  });

  it("reports every invalid field at once", async () => {
    const result = await t.client.request(CreateWorkspaceDocument, { input: { title: "", goal: "" } });
    expect(result.createWorkspace.__typename).toBe("ValidationError");
    if (result.createWorkspace.__typename !== "ValidationError") return;
    expect(result.createWorkspace.issues.map((issue) => issue.field).sort()).toEqual(["goal", "title"]);
  });

  it("accepts a goal of exactly 20,000 characters (counted as characters, not bytes)", async () => {
    const goal = "研".repeat(20_000);
    const result = await t.client.request(CreateWorkspaceDocument, { input: { title: "CJK", goal } });
    expect(result.createWorkspace.__typename).toBe("CreateWorkspaceSuccess");
    const tooLong = await t.client.request(UpdateGoalDocument, {
      input: { workspaceId, statement: `${goal}研`, expectedVersion: 1 },
    });
    expect(tooLong.updateGoal).toMatchObject({ __typename: "ValidationError", issues: [{ field: "statement" }] });
  });

  it.each([
    ["a malformed id", "not-an-id!", "ValidationError"],
    ["an id of another type", encodeGlobalId("GoalVersion", "x"), "ValidationError"],
    ["an unknown workspace id", encodeGlobalId("Workspace", "does-not-exist"), "NotFoundError"],
  ])("answers %s with a typed error and writes nothing", async (_name, id, typename) => {
    const before = await counts();
    const update = await t.client.request(UpdateGoalDocument, {
      input: { workspaceId: id, statement: "s", expectedVersion: 1 },
    });
    expect(update.updateGoal.__typename).toBe(typename);
    const archive = await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId: id } });
    expect(archive.archiveWorkspace.__typename).toBe(typename);
    expect(await counts()).toEqual(before);
  });

  it("rejects an empty statement and an expected version below 1", async () => {
    const before = await counts();
    const result = await t.client.request(UpdateGoalDocument, {
      input: { workspaceId, statement: " ", expectedVersion: 0 },
    });
    expect(result.updateGoal.__typename).toBe("ValidationError");
    if (result.updateGoal.__typename !== "ValidationError") return;
    expect(result.updateGoal.issues.map((issue) => issue.field).sort()).toEqual(["expectedVersion", "statement"]);
    expect(await counts()).toEqual(before);
  });

  it("reads unknown, malformed and foreign-typed ids as null", async () => {
    for (const id of ["garbage", encodeGlobalId("Workspace", "nope"), encodeGlobalId("NoSuchType", "1"), "Zm9v"]) {
      expect((await t.client.request(NodeDocument, { id })).node).toBeNull();
      expect((await t.client.request(WorkspaceDocument, { id })).workspace).toBeNull();
    }
    const node = await t.client.request(NodeDocument, { id: workspaceId });
    expect(node.node).toMatchObject({ __typename: "Workspace", id: workspaceId, title: "Base" });
  });

  it("lists workspaces newest first and refuses page sizes beyond the limit", async () => {
    for (const title of ["older", "newer"]) {
      await t.client.request(CreateWorkspaceDocument, { input: { title, goal: "g" } });
    }
    const page = await t.client.request(WorkspacesDocument, { first: 2 });
    expect(page.workspaces.edges.map((e) => e.node.title)).toEqual(["newer", "older"]);
    expect(page.workspaces.pageInfo.hasNextPage).toBe(true);
    const huge = await t.client.request(WorkspacesDocument, { first: 100_000 }).catch((error: Error) => error);
    expect(String(huge)).toContain('first: 100000 asks for more than 200 items; page through the connection with "after" instead.');
  });
});
