// W6, W7: the history catalog is bounded, principal-scoped and honest about truncation, and
// exact-version reads check existence, ownership, content hash and source eligibility.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AdmitRunDocument,
  HistoryCatalogDocument,
  LinkToWorkspaceDocument,
  ReadMaterialDocument,
  RevokePublicationVersionDocument,
} from "../../sdk/generated/graphql.js";
import { encodeGlobalId, idOfType } from "../../src/graphql/global-id.js";
import { backends } from "../support/databases.js";
import { createWorkspace, expectType, publish, startConversation } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("history catalog and exact reads on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(async () => t?.close());

  const catalogOf = async (client: TestApp["client"], workspaceId: string, first?: number) =>
    expectType((await client.request(HistoryCatalogDocument, { workspaceId, first })).node!, "Workspace").historyCatalog;
  const link = (workspaceId: string, targetId: string) => t.client.request(LinkToWorkspaceDocument, { input: { workspaceId, targetId } });

  it("draws on linked publications, linked runs and runs in linked conversations, and says when it is truncated", async () => {
    const workspace = await createWorkspace(t.client);
    const linked = await publish(t.client, { title: "Linked directly", content: "x" });
    await link(workspace.id, linked.version.publication.id);
    // A run outside the workspace, then linked; and a run inside a conversation that gets linked.
    const run = expectType((await t.client.request(AdmitRunDocument, { input: { question: "side question" } })).admitRun, "AdmitRunSuccess").run;
    const fromRun = await publish(t.client, { title: "From a linked run", content: "y", originRunId: run.id });
    await link(workspace.id, run.id);
    const conversation = await startConversation(t.client, "Earlier chat");
    const chatRun = expectType(
      (await t.client.request(AdmitRunDocument, { input: { question: "chat question", conversationId: conversation.id } })).admitRun,
      "AdmitRunSuccess",
    ).run;
    await publish(t.client, { title: "From a linked conversation", content: "z", originRunId: chatRun.id });
    await link(workspace.id, conversation.id);
    const unlinked = await publish(t.client, { title: "Not linked", content: "w" });
    await publish(t.client, { publicationId: fromRun.version.publication.id, content: "y2", asOf: "2026-01-01T00:00:00.000Z" });

    const catalog = await catalogOf(t.client, workspace.id);
    expect(catalog).toMatchObject({ complete: true, truncatedReason: null });
    expect(catalog.entries.map((e) => [e.title, e.via])).toEqual([
      ["From a linked conversation", ["LINKED_CONVERSATION"]],
      ["From a linked run", ["LINKED_RUN"]],
      ["Linked directly", ["LINKED_PUBLICATION"]],
    ]);
    expect(catalog.entries.map((e) => e.publicationId)).not.toContain(unlinked.version.publication.id);
    const fromRunEntry = catalog.entries.find((e) => e.title === "From a linked run")!;
    expect(fromRunEntry.versions.map((v) => [v.version, v.asOf, v.originRun?.id ?? null, v.availability.status])).toEqual([
      [2, "2026-01-01T00:00:00.000Z", null, "AVAILABLE"],
      [1, fromRun.version.asOf, run.id, "AVAILABLE"],
    ]);

    const bounded = await catalogOf(t.client, workspace.id, 2);
    expect(bounded.entries).toHaveLength(2);
    expect(bounded).toMatchObject({ complete: false, truncatedReason: "MORE_ENTRIES", pageInfo: { hasNextPage: true } });
    const tooMany = await t.client.request(HistoryCatalogDocument, { workspaceId: workspace.id, first: 201 }).catch((error: Error) => error);
    expect(String(tooMany)).toContain("first: 201 asks for more than 200 items");

    // Another principal sees neither the workspace nor its catalog.
    const other = t.as(await t.createPrincipal("other"));
    expect((await other.request(HistoryCatalogDocument, { workspaceId: workspace.id })).node).toBeNull();
  });

  it("reads exactly the version asked for, and refuses what is missing, foreign, tampered with or built on a revoked source", async () => {
    const base = await publish(t.client, { title: "Base", content: "base v1" });
    const baseId = base.version.publication.id;
    await publish(t.client, { publicationId: baseId, content: "base v2" });
    const read = async (client: TestApp["client"], publicationId: string, version: number) =>
      (await client.request(ReadMaterialDocument, { publicationId, version })).readMaterial;

    expect(await read(t.client, baseId, 1)).toMatchObject({ status: "AVAILABLE", reason: null, publicationVersion: { version: 1, content: "base v1" } });
    const missing = await read(t.client, encodeGlobalId("Publication", "no-such-publication"), 1);
    const other = t.as(await t.createPrincipal("reader"));
    const foreign = await read(other, baseId, 1);
    // Another principal's version and a version that does not exist look the same.
    expect(foreign).toEqual(missing);
    expect(missing).toEqual({ status: "UNAVAILABLE", reason: "there is no version 1 of that publication that you may read", publicationVersion: null });
    expect((await read(t.client, baseId, 3)).status).toBe("UNAVAILABLE");

    const derived = await publish(t.client, { title: "Derived", content: "built on base v1", sources: [{ publicationId: baseId, version: 1 }] });
    // Someone edits the stored body behind the publication module's back.
    await t.app.db.prisma.$executeRawUnsafe(
      `UPDATE publication_version SET content = 'base v1 (edited)' WHERE publication_id = $1 AND version = 1`,
      idOfType(baseId, "Publication"),
    );
    expect(await read(t.client, baseId, 1)).toEqual({
      status: "UNAVAILABLE",
      reason: '"Base" version 1 no longer matches its content hash',
      publicationVersion: null,
    });
    expect((await read(t.client, derived.version.publication.id, 1)).reason).toBe('it depends on "Base" version 1, which no longer matches its content hash');
    // The newer version is unaffected and is never substituted for the old one.
    expect(await read(t.client, baseId, 2)).toMatchObject({ status: "AVAILABLE", publicationVersion: { version: 2 } });

    const revoke = await t.client.request(RevokePublicationVersionDocument, { input: { publicationId: baseId, version: 2, reason: "  " } });
    expect(expectType(revoke.revokePublicationVersion, "ValidationError").issues).toEqual([{ field: "reason", message: "must not be empty" }]);
    const foreignRevoke = await other.request(RevokePublicationVersionDocument, { input: { publicationId: baseId, version: 2, reason: "mine now" } });
    expect(foreignRevoke.revokePublicationVersion.__typename).toBe("NotFoundError");
    expect(await read(t.client, baseId, 2)).toMatchObject({ status: "AVAILABLE" });
  });
});
