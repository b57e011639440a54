// A run admitted with continuesPublicationId (a schedule's fire) publishes its answer as the next
// version of that publication, labelled as of its admission. The model is a real HTTP server
// speaking the OpenAI protocol; both databases.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NotFoundError } from "../../src/domain/errors.js";
import { encodeGlobalId, idOfType } from "../../src/domain/global-id.js";
import { DEVELOPMENT_PRINCIPAL_ID } from "../../src/domain/principal/principal-service.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace } from "../support/fixtures.js";
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
