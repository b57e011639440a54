// An admission that names no conversation is one SQL statement (admit-in-one-statement.ts): the
// run it returns is the run as stored, its materials, link and key are written with it, and a
// missing material or a closed workspace writes nothing at all.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdmitRunDocument, ArchiveWorkspaceDocument } from "../../sdk/generated/graphql.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const localId = (globalId: string) => Buffer.from(globalId, "base64").toString("utf8").split(":").slice(1).join(":");

describe.each(backends)("admission in one statement on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];

  beforeAll(async () => {
    t = await startTestApp(backend, {
      database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  const counted = async <T>(work: () => Promise<T>): Promise<{ result: T; sql: string[] }> => {
    statements.length = 0;
    const result = await work();
    return { result, sql: statements.filter((sql) => !/^\s*(BEGIN|COMMIT|SELECT 1)\b/i.test(sql)) };
  };

  it("writes the run, its conversation, materials, workspace link and key in one statement, and returns the run as stored", async () => {
    const workspace = await createWorkspace(t.client);
    const a = await publish(t.client, { title: "Source A", content: "a" });
    const b = await publish(t.client, { title: "Source B", content: "b" });
    const materials = [
      { publicationId: b.version.publication.id, version: 1 },
      { publicationId: a.version.publication.id, version: 1 },
      { publicationId: b.version.publication.id, version: 1 },
    ];
    const { result, sql } = await counted(() =>
      admit(t.client, { workspaceId: workspace.id, question: "Which sources agree?", materials, idempotencyKey: "one-statement" }),
    );
    // The admission is the first statement and the only one that writes; the rest read the fields the document asks for.
    expect(sql.filter((statement) => /\b(INSERT|UPDATE|DELETE)\b/i.test(statement))).toEqual([sql[0]]);
    expect(sql[0]).toMatch(/INSERT INTO run_material[\s\S]*INSERT INTO workspace_link/);

    const prisma = t.app.db.prisma;
    const runId = localId(result.run.id);
    const stored = await prisma.run.findUniqueOrThrow({ where: { id: runId }, include: { materials: { orderBy: { position: "asc" } } } });
    expect(stored.goalVersionNo).toBe(1);
    expect(stored.status).toBe("QUEUED");
    expect(stored.materials.map((m) => m.position)).toEqual([0, 1]);
    expect(await prisma.workspaceLink.count({ where: { workspaceId: localId(workspace.id), targetKind: "RUN", targetId: runId } })).toBe(1);
    expect((await prisma.idempotencyKey.findFirstOrThrow({ where: { key: "one-statement" } })).runId).toBe(runId);
    expect((await prisma.conversation.findUniqueOrThrow({ where: { id: stored.conversationId } })).title).toBe("Which sources agree?");

    // What the statement returned is what a read returns (no field missing or differently typed).
    const { admitInOneStatement } = await import("../../src/domain/runs/admit-in-one-statement.js");
    const now = new Date();
    const direct = await admitInOneStatement(prisma, {
      ownerId: stored.ownerId,
      runId: crypto.randomUUID(),
      workspaceId: null,
      agent: "researcher",
      agentProfileId: stored.agentProfileId!,
      priority: 0,
      tags: ["triage", "billing"],
      metadata: { ticket: "T-1" },
      question: "Direct",
      limits: { maxTurns: 3, tokenBudget: 1000, deadlineSeconds: 60 },
      materials: [],
      admittedByToken: null,
      tokenReadableWorkspaceIds: [],
      idempotency: null,
      maxQueuedRuns: 1_000,
      now,
    });
    expect(direct.kind).toBe("admitted");
    const returned = (direct as { run: { id: string } }).run;
    expect(returned).toEqual(await prisma.run.findUniqueOrThrow({ where: { id: returned.id } }));

    // The same key again: the first run, nothing new.
    const again = await admit(t.client, { workspaceId: workspace.id, question: "Which sources agree?", materials, idempotencyKey: "one-statement" });
    expect(again.run.id).toBe(result.run.id);
    expect(again.replayed).toBe(true);
  });

  it("writes nothing when a material is missing or the workspace is archived, and says why", async () => {
    const workspace = await createWorkspace(t.client);
    const a = await publish(t.client, { title: "Source", content: "a" });
    const prisma = t.app.db.prisma;
    const before = { runs: await prisma.run.count(), conversations: await prisma.conversation.count(), keys: await prisma.idempotencyKey.count() };

    const missing = await t.client.request(AdmitRunDocument, {
      input: {
        workspaceId: workspace.id,
        question: "q",
        idempotencyKey: "missing",
        materials: [
          { publicationId: a.version.publication.id, version: 1 },
          { publicationId: a.version.publication.id, version: 2 },
        ],
      },
    });
    expect(missing.admitRun.__typename).toBe("NotFoundError");

    expectType((await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } })).archiveWorkspace, "ArchiveWorkspaceSuccess");
    const archived = await t.client.request(AdmitRunDocument, { input: { workspaceId: workspace.id, question: "q", idempotencyKey: "archived" } });
    expect(archived.admitRun.__typename).toBe("WorkspaceArchivedError");

    expect({ runs: await prisma.run.count(), conversations: await prisma.conversation.count(), keys: await prisma.idempotencyKey.count() }).toEqual(before);
  });
});
