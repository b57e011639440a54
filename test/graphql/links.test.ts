// W3, W14, W15, W16: links copy nothing; archive blocks new links; delete leaves research
// results alone and a tombstone that nothing recreates; HTML artifacts can be retained.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AdmitRunDocument,
  ArchiveWorkspaceDocument,
  ArtifactDocument,
  DeleteWorkspaceDocument,
  LinkToWorkspaceDocument,
  NodeDocument,
  PublicationDocument,
  RestoreWorkspaceDocument,
  RetainArtifactDocument,
  RunDocument,
  UnlinkFromWorkspaceDocument,
  UpdateCheckpointDocument,
  UpdateGoalDocument,
  WorkspaceDocument,
  WorkspaceLinksDocument,
} from "../../sdk/generated/graphql.js";
import type { ArtifactService } from "../../src/domain/research/artifact-service.js";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { backends } from "../support/databases.js";
import { admit, createArtifact, createWorkspace, expectType, publish, startConversation } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("workspace links on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(async () => t?.close());

  const link = (workspaceId: string, targetId: string) =>
    t.client.request(LinkToWorkspaceDocument, { input: { workspaceId, targetId } }).then((r) => r.linkToWorkspace);
  const linksOf = async (workspaceId: string) =>
    (await t.client.request(WorkspaceLinksDocument, { workspaceId, first: 100 })).workspace?.links.edges.map((e) => e.node) ?? [];

  it("links a conversation, a publication and an artifact without copying them, idempotently", async () => {
    const workspace = await createWorkspace(t.client);
    const conversation = await startConversation(t.client, "Interviews");
    const published = await publish(t.client, { title: "Market map", content: "body" });
    const artifact = await createArtifact(t.client);
    const publicationsBefore = await t.app.db.prisma.publicationVersion.count();

    const first = expectType(await link(workspace.id, conversation.id), "LinkToWorkspaceSuccess");
    const again = expectType(await link(workspace.id, conversation.id), "LinkToWorkspaceSuccess");
    expect(again.link.id).toBe(first.link.id);
    expectType(await link(workspace.id, published.version.publication.id), "LinkToWorkspaceSuccess");
    expectType(await link(workspace.id, artifact.id), "LinkToWorkspaceSuccess");

    const links = await linksOf(workspace.id);
    expect(links.map((l) => [l.kind, l.target?.__typename, l.target && "id" in l.target ? l.target.id : null]).sort()).toEqual(
      [
        ["ARTIFACT", "Artifact", artifact.id],
        ["CONVERSATION", "Conversation", conversation.id],
        ["PUBLICATION", "Publication", published.version.publication.id],
      ].sort(),
    );
    expect(await t.app.db.prisma.publicationVersion.count()).toBe(publicationsBefore);
  });

  it("links an admitted run automatically, and unlinks without touching the object", async () => {
    const workspace = await createWorkspace(t.client);
    const { run } = await admit(t.client, { workspaceId: workspace.id, question: "q" });
    expect((await linksOf(workspace.id)).map((l) => [l.kind, l.target && "id" in l.target ? l.target.id : null])).toEqual([["RUN", run.id]]);
    const removed = expectType(
      (await t.client.request(UnlinkFromWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: run.id } })).unlinkFromWorkspace,
      "UnlinkFromWorkspaceSuccess",
    );
    expect(removed.unlinked).toBe(true);
    const twice = await t.client.request(UnlinkFromWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: run.id } });
    expect(twice.unlinkFromWorkspace).toMatchObject({ unlinked: false });
    expect(await linksOf(workspace.id)).toEqual([]);
    expect((await t.client.request(RunDocument, { id: run.id })).node).toMatchObject({ id: run.id, status: "QUEUED" });
  });

  it("refuses targets that are not linkable, or not found, with typed errors", async () => {
    const workspace = await createWorkspace(t.client);
    const other = await createWorkspace(t.client);
    expect((await link(workspace.id, other.id)).__typename).toBe("ValidationError");
    expect((await link(workspace.id, "garbage")).__typename).toBe("ValidationError");
    expect((await link(workspace.id, encodeGlobalId("Run", "missing"))).__typename).toBe("NotFoundError");
    const conversation = await startConversation(t.client);
    expect((await link(encodeGlobalId("Workspace", "missing"), conversation.id)).__typename).toBe("NotFoundError");
  });

  it("blocks new links while archived and allows them again after restore", async () => {
    const workspace = await createWorkspace(t.client);
    const conversation = await startConversation(t.client);
    await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    expect((await link(workspace.id, conversation.id)).__typename).toBe("WorkspaceArchivedError");
    expect(await linksOf(workspace.id)).toEqual([]);
    await t.client.request(RestoreWorkspaceDocument, { input: { workspaceId: workspace.id } });
    expect((await link(workspace.id, conversation.id)).__typename).toBe("LinkToWorkspaceSuccess");
  });

  it("does not link what a run publishes while its workspace is archived, and records that", async () => {
    const workspace = await createWorkspace(t.client);
    const { run } = await admit(t.client, { workspaceId: workspace.id, question: "q" });
    await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    const archived = await publish(t.client, { title: "Answer", content: "while archived", originRunId: run.id });
    expect(archived.workspaceLink).toBe("NOT_LINKED_WORKSPACE_ARCHIVED");
    await t.client.request(RestoreWorkspaceDocument, { input: { workspaceId: workspace.id } });
    expect((await linksOf(workspace.id)).map((l) => l.kind)).toEqual(["RUN"]);
    const refusals = await t.app.db.prisma.linkRefusal.findMany({ where: { runId: idOf(run.id) } });
    expect(refusals.map((r) => r.reason)).toEqual(["WORKSPACE_ARCHIVED"]);

    const later = await publish(t.client, { title: "Answer 2", content: "after restore", originRunId: run.id });
    expect(later.workspaceLink).toBe("LINKED");
    expect((await linksOf(workspace.id)).map((l) => l.kind).sort()).toEqual(["PUBLICATION", "RUN"]);
  });

  it("deletes the workspace's own organisation only; research results survive; a late link recreates nothing", async () => {
    const workspace = await createWorkspace(t.client, "goal before delete");
    const material = await publish(t.client, { title: "Material", content: "m" });
    const { run } = await admit(t.client, {
      workspaceId: workspace.id,
      question: "q",
      materials: [{ publicationId: material.version.publication.id, version: 1 }],
    });
    await link(workspace.id, material.version.publication.id);
    const keptConversationId = (await startConversation(t.client, "Kept conversation")).id;
    await link(workspace.id, keptConversationId);
    const artifact = await createArtifact(t.client, "text/html", "<p>kept</p>");
    await link(workspace.id, artifact.id);
    for (const expectedRevision of [0, 1]) {
      const updated = await t.client.request(UpdateCheckpointDocument, {
        input: { workspaceId: workspace.id, expectedRevision, summary: `revision ${expectedRevision + 1}`, questions: [] },
      });
      expectType(updated.updateCheckpoint, "UpdateCheckpointSuccess");
    }
    expect(await t.app.db.prisma.checkpointVersion.count({ where: { workspaceId: idOf(workspace.id) } })).toBe(2);
    const goalVersionId = workspace.goal.id;

    const deleted = await t.client.request(DeleteWorkspaceDocument, { input: { workspaceId: workspace.id } });
    expect(expectType(deleted.deleteWorkspace, "DeleteWorkspaceSuccess").deletedWorkspaceId).toBe(workspace.id);

    expect((await t.client.request(WorkspaceDocument, { id: workspace.id })).workspace).toBeNull();
    expect((await t.client.request(NodeDocument, { id: workspace.id })).node).toBeNull();
    expect((await t.client.request(NodeDocument, { id: goalVersionId })).node).toBeNull();
    const survivor = expectType((await t.client.request(RunDocument, { id: run.id })).node!, "Run");
    expect(survivor.workspace).toBeNull();
    expect(survivor.frozenGoal).toEqual({ version: 1, statement: "goal before delete" });
    expect(survivor.materials).toHaveLength(1);
    const publication = await t.client.request(PublicationDocument, { id: material.version.publication.id, version: 1 });
    expect(publication.node).toMatchObject({ version: { content: "m" } });
    // The checkpoint revisions were the workspace's own: none is left behind.
    expect(await t.app.db.prisma.checkpointVersion.count({ where: { workspaceId: idOf(workspace.id) } })).toBe(0);
    // The conversation and the artifact it linked are research results and still read.
    const keptConversation = await t.client.request(NodeDocument, { id: keptConversationId });
    expect(keptConversation.node).toMatchObject({ __typename: "Conversation", id: keptConversationId });
    const keptArtifact = expectType((await t.client.request(ArtifactDocument, { id: artifact.id })).node!, "Artifact");
    expect(keptArtifact.content).toBe("<p>kept</p>");

    // The run finishes after the delete and publishes its answer: no link, no resurrection.
    const late = await publish(t.client, { title: "Late answer", content: "a", originRunId: run.id });
    expect(late.workspaceLink).toBe("NOT_LINKED_WORKSPACE_DELETED");
    const tombstone = await t.app.db.prisma.workspace.findUniqueOrThrow({ where: { id: idOf(workspace.id) } });
    expect(tombstone.deletedAt).not.toBeNull();
    expect(await t.app.db.prisma.workspaceLink.count({ where: { workspaceId: tombstone.id } })).toBe(0);
    expect(await t.app.db.prisma.goalVersion.count({ where: { workspaceId: tombstone.id } })).toBe(0);
    expect((await t.app.db.prisma.linkRefusal.findMany({ where: { workspaceId: tombstone.id } })).map((r) => r.reason)).toEqual(["WORKSPACE_DELETED"]);
    expect((await t.client.request(WorkspaceDocument, { id: workspace.id })).workspace).toBeNull();

    // Everything else that names the workspace now answers NotFoundError.
    const conversation = await startConversation(t.client);
    expect((await link(workspace.id, conversation.id)).__typename).toBe("NotFoundError");
    const admitAfter = await t.client.request(AdmitRunDocument, { input: { workspaceId: workspace.id, question: "q" } });
    expect(admitAfter.admitRun.__typename).toBe("NotFoundError");
    const updateAfter = await t.client.request(UpdateGoalDocument, {
      input: { workspaceId: workspace.id, statement: "s", expectedVersion: 1 },
    });
    expect(updateAfter.updateGoal.__typename).toBe("NotFoundError");
    const deleteAgain = await t.client.request(DeleteWorkspaceDocument, { input: { workspaceId: workspace.id } });
    expect(deleteAgain.deleteWorkspace.__typename).toBe("NotFoundError");
  });

  describe("artifact retention", () => {
    const retain = (workspaceId: string, artifactId: string) =>
      t.client.request(RetainArtifactDocument, { input: { workspaceId, artifactId } }).then((r) => r.retainArtifact);

    it("retains an HTML artifact and links it", async () => {
      const workspace = await createWorkspace(t.client);
      const artifact = await createArtifact(t.client, "text/html; charset=utf-8", "<p>Résumé</p>");
      expect(artifact).toMatchObject({ retention: "TEMPORARY", size: Buffer.byteLength("<p>Résumé</p>") });
      expect(artifact.expiresAt).not.toBeNull();
      const result = expectType(await retain(workspace.id, artifact.id), "RetainArtifactSuccess");
      expect(result).toMatchObject({ outcome: "RETAINED_AND_LINKED", artifact: { retention: "RETAINED", expiresAt: null } });
      expect((await linksOf(workspace.id)).map((l) => l.kind)).toEqual(["ARTIFACT"]);
      const read = expectType((await t.client.request(ArtifactDocument, { id: artifact.id })).node!, "Artifact");
      expect(read.content).toBe("<p>Résumé</p>");
    });

    it("answers other types with UnsupportedError and retains nothing", async () => {
      const workspace = await createWorkspace(t.client);
      const artifact = await createArtifact(t.client, "application/pdf", "%PDF");
      expect((await retain(workspace.id, artifact.id)).__typename).toBe("UnsupportedError");
      const read = expectType((await t.client.request(ArtifactDocument, { id: artifact.id })).node!, "Artifact");
      expect(read.retention).toBe("TEMPORARY");
      expect(await linksOf(workspace.id)).toEqual([]);
    });

    it("refuses an expired artifact with ArtifactExpiredError, linking nothing", async () => {
      const workspace = await createWorkspace(t.client);
      const artifact = await createArtifact(t.client);
      const expiredAt = new Date(Date.now() - 1000);
      await t.app.db.prisma.artifact.update({ where: { id: idOf(artifact.id) }, data: { expiresAt: expiredAt } });
      const result = expectType(await retain(workspace.id, artifact.id), "ArtifactExpiredError");
      expect(result.expiredAt).toBe(expiredAt.toISOString());
      expect(await linksOf(workspace.id)).toEqual([]);
      const read = await t.app.db.prisma.artifact.findUniqueOrThrow({ where: { id: idOf(artifact.id) } });
      expect(read).toMatchObject({ retention: "TEMPORARY", expiresAt: expiredAt });
    });
  });
});

describe.each(backends)("artifact retention whose link cannot be confirmed, on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    // The workspace is archived by another request just after the artifact module retained
    // the artifact and before the workspace could link it.
    t = await startTestApp(backend, {
      artifactRetention: (artifacts: ArtifactService) => ({
        async retain(actor, artifactId) {
          const decision = await artifacts.retain(actor, artifactId);
          const [link] = await t.app.db.prisma.workspace.findMany({ where: { ownerId: actor.principalId, title: "Racing" } });
          if (link) await t.app.services.workspaces.archiveWorkspace(actor, link.id);
          return decision;
        },
      }),
    });
  });
  afterAll(async () => t?.close());

  it("reports RETAINED_LINK_UNCONFIRMED: retained by the artifact module, not linked", async () => {
    const created = await t.client.request((await import("../../sdk/generated/graphql.js")).CreateWorkspaceDocument, {
      input: { title: "Racing", goal: "g" },
    });
    const workspace = expectType(created.createWorkspace, "CreateWorkspaceSuccess").workspace;
    const artifact = await createArtifact(t.client);
    const result = await t.client.request(RetainArtifactDocument, { input: { workspaceId: workspace.id, artifactId: artifact.id } });
    expect(expectType(result.retainArtifact, "RetainArtifactSuccess")).toMatchObject({
      outcome: "RETAINED_LINK_UNCONFIRMED",
      artifact: { retention: "RETAINED" },
      link: null,
    });
    const links = await t.client.request(WorkspaceLinksDocument, { workspaceId: workspace.id });
    expect(links.workspace?.links.edges).toEqual([]);
  });
});

/** The database id inside a global id (for assertions on the stored state). */
function idOf(globalId: string): string {
  return Buffer.from(globalId, "base64").toString("utf8").split(":").slice(1).join(":");
}
