// W14 (this slice): archive and restore change the workspace's status and nothing else.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ArchiveWorkspaceDocument,
  CreateWorkspaceDocument,
  GoalVersionsDocument,
  RestoreWorkspaceDocument,
  UpdateGoalDocument,
} from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("archive and restore on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(async () => t?.close());

  it("archives, stays archived when archived again, and restores; goal history is untouched", async () => {
    const created = await t.client.request(CreateWorkspaceDocument, { input: { title: "A", goal: "v1" } });
    if (created.createWorkspace.__typename !== "CreateWorkspaceSuccess") throw new Error("setup failed");
    const workspaceId = created.createWorkspace.workspace.id;
    expect(created.createWorkspace.workspace).toMatchObject({ status: "ACTIVE", archivedAt: null });

    const archived = await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId } });
    if (archived.archiveWorkspace.__typename !== "ArchiveWorkspaceSuccess") throw new Error("archive failed");
    const archivedAt = archived.archiveWorkspace.workspace.archivedAt;
    expect(archived.archiveWorkspace.workspace.status).toBe("ARCHIVED");
    expect(archivedAt).not.toBeNull();

    const again = await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId } });
    expect(again.archiveWorkspace).toMatchObject({ workspace: { status: "ARCHIVED", archivedAt } });

    // This slice leaves goal updates open on archived workspaces; history keeps growing.
    const update = await t.client.request(UpdateGoalDocument, {
      input: { workspaceId, statement: "v2", expectedVersion: 1 },
    });
    expect(update.updateGoal.__typename).toBe("UpdateGoalSuccess");

    const restored = await t.client.request(RestoreWorkspaceDocument, { input: { workspaceId } });
    expect(restored.restoreWorkspace).toMatchObject({ workspace: { status: "ACTIVE", archivedAt: null } });
    const versions = await t.client.request(GoalVersionsDocument, { workspaceId });
    expect(versions.workspace?.goalVersions.edges.map((e) => e.node.statement)).toEqual(["v2", "v1"]);
  });
});
