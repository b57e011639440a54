// A run admitted with continuesPublicationId (a schedule's fire) publishes its answer as the next
// version of that publication, labelled as of its admission. The model is a real HTTP server
// speaking the OpenAI protocol; both databases.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { applyPatch, diffLines } from "diff";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PublicationDocument } from "../../sdk/generated/graphql.js";
import { NotFoundError } from "../../src/domain/errors.js";
import { CHANGES_DIFF_MAX } from "../../src/domain/research/publication-changes.js";
import { encodeGlobalId, idOfType } from "../../src/domain/global-id.js";
import { DEVELOPMENT_PRINCIPAL_ID } from "../../src/domain/principal/principal-service.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, publish } from "../support/fixtures.js";
import { type ChatBody, type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { questionOf } from "../support/requests.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const FIRST = ["# EU battery makers", "", "- Northvolt: 60 GWh planned", "- ACC: 40 GWh planned", "- Verkor: 16 GWh planned"].join("\n");
const SECOND = [
  "# EU battery makers",
  "",
  "- Northvolt: insolvent, plans withdrawn",
  "- ACC: 40 GWh planned",
  "- Verkor: 16 GWh planned",
  "- PowerCo: 40 GWh planned",
].join("\n");
const ANSWERS: Record<string, string> = { "fire 1": FIRST, "fire 2": SECOND };

const me = { principalId: DEVELOPMENT_PRINCIPAL_ID };

describe.each(backends)("continuing a publication on %s", (backend) => {
  let stub: OpenAIStreamStub;
  let t: TestApp;
  const requests: ChatBody[] = [];

  beforeAll(async () => {
    stub = await startOpenAIStreamStub((body) => {
      requests.push(body);
      const asked = questionOf(String(body.messages.findLast((m) => m.role === "user")?.content));
      return { text: [ANSWERS[asked] ?? "?"] };
    });
    t = await startTestApp(backend, {
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-continues-")),
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await stub?.close();
  });

  const publishedBy = async (runId: string) => {
    const { publicationVersionId } = await t.app.db.prisma.runPublication.findUniqueOrThrow({ where: { runId } });
    return t.app.db.prisma.publicationVersion.findUniqueOrThrow({ where: { id: publicationVersionId! } });
  };

  it("the second run publishes the next version of the first run's publication, as of its admission", { timeout: 120_000 }, async () => {
    const workspace = await createWorkspace(t.client);
    const workspaceId = idOfType(workspace.id, "Workspace")!;
    const first = await admit(t.client, { workspaceId: workspace.id, question: "fire 1" });
    expect((await settled(t.client, first.run.id, 60_000)).status).toBe("SUCCEEDED");
    const v1 = await publishedBy(idOfType(first.run.id, "Run")!);
    expect([v1.version, v1.content]).toEqual([1, FIRST]);

    const { run } = await t.app.services.admissions.admitRun(me, { workspaceId, question: "fire 2", continuesPublicationId: v1.publicationId });
    expect(run.continuesPublicationId).toBe(v1.publicationId);
    expect((await settled(t.client, encodeGlobalId("Run", run.id), 60_000)).status).toBe("SUCCEEDED");
    const v2 = await publishedBy(run.id);
    expect([v2.publicationId, v2.version, v2.content]).toEqual([v1.publicationId, 2, SECOND]);
    expect(v2.asOf.toISOString()).toBe(run.createdAt.toISOString());
    expect((await t.app.db.prisma.publication.findUniqueOrThrow({ where: { id: v1.publicationId } })).latestVersion).toBe(2);

    // What changed, as read through the API: a diff of the two answers, its counts counted here.
    const node = (await t.client.request(PublicationDocument, { id: encodeGlobalId("Publication", v1.publicationId), version: 2 })).node;
    if (node?.__typename !== "Publication") throw new Error("publication not found");
    const changes = node.version!.changesFromPrevious!;
    const parts = diffLines(FIRST, SECOND);
    const counted = (kind: "added" | "removed") => parts.filter((part) => part[kind]).reduce((sum, part) => sum + (part.count ?? 0), 0);
    expect(changes).toMatchObject({ previousVersion: 1, addedLines: counted("added"), removedLines: counted("removed"), diffTruncated: false });
    expect(changes.diff.startsWith("--- version 1\n+++ version 2\n")).toBe(true);
    expect(changes.diff).toContain("\n-- Northvolt: 60 GWh planned\n");
    expect(changes.diff).toContain("\n+- PowerCo: 40 GWh planned");
    expect(applyPatch(FIRST, changes.diff)).toBe(SECOND);
    expect(node.latestVersion.changesFromPrevious).toEqual(changes);

    // The second run was told what the first version said, and when.
    const told = requests.filter((body) => questionOf(String(body.messages.findLast((m) => m.role === "user")?.content)) === "fire 2");
    const context = told[0]!.messages.map((m) => String(m.content ?? "")).join("\n");
    expect(context).toContain(`version 1, as of ${v1.asOf.toISOString()}`);
    expect(context).toContain(`<previous-version>\n${FIRST}\n</previous-version>`);
    expect(context).toContain("published as version 2");
    // The first run continued nothing and was told no content.
    const first1 = requests.find((body) => questionOf(String(body.messages.findLast((m) => m.role === "user")?.content)) === "fire 1")!;
    expect(first1.messages.map((m) => String(m.content ?? "")).join("\n")).not.toContain("<previous-version>");
  });

  it("a huge change keeps whole counts and a diff cut at the documented bound", { timeout: 60_000 }, async () => {
    const lines = (tag: string) => Array.from({ length: 3_000 }, (_, i) => `${tag} line ${i}`).join("\n");
    const v1 = (await publish(t.client, { title: "Huge", content: lines("old") })).version;
    await publish(t.client, { publicationId: v1.publication.id, content: lines("new") });
    const node = (await t.client.request(PublicationDocument, { id: v1.publication.id, version: 1 })).node;
    if (node?.__typename !== "Publication") throw new Error("publication not found");
    expect(node.version!.changesFromPrevious).toBeNull();
    const changes = node.latestVersion.changesFromPrevious!;
    expect([changes.previousVersion, changes.addedLines, changes.removedLines, changes.diffTruncated]).toEqual([1, 3_000, 3_000, true]);
    expect(changes.diff.length).toBeLessThanOrEqual(CHANGES_DIFF_MAX);
    expect(changes.diff.length).toBeGreaterThan(CHANGES_DIFF_MAX - 100);
    expect(changes.diff.endsWith("\n")).toBe(true);
  });

  it("a publication that is not the principal's is refused at admission, on both admission paths", { timeout: 60_000 }, async () => {
    const workspace = await createWorkspace(t.client);
    const workspaceId = idOfType(workspace.id, "Workspace")!;
    const other = await t.app.db.prisma.principal.create({ data: { name: "someone else" } });
    const theirs = await t.app.db.prisma.publication.create({ data: { ownerId: other.id, title: "Theirs", latestVersion: 0 } });
    const conversation = await t.app.db.prisma.conversation.create({ data: { ownerId: DEVELOPMENT_PRINCIPAL_ID, title: "c" } });
    for (const where of [{ workspaceId }, { workspaceId, conversationId: conversation.id }]) {
      await expect(t.app.services.admissions.admitRun(me, { ...where, question: "fire x", continuesPublicationId: theirs.id })).rejects.toBeInstanceOf(
        NotFoundError,
      );
    }
    expect(await t.app.db.prisma.run.count({ where: { question: "fire x" } })).toBe(0);
  });
});
