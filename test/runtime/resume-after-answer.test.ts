// R17: a worker that dies after the model's final reply is logged but before the run settles
// leaves the run to another worker, which settles it with that reply instead of asking again.
import { unfenced } from "../../src/domain/transaction.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { idOfType } from "../../src/graphql/global-id.js";
import { appendRows } from "../../src/runtime/adapters/prisma-conversation-log.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends, createPersistentTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("resuming an answered run on %s", (backend) => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it("settles with the logged final reply and never calls the model again", async () => {
    const database = await createPersistentTestDatabase(backend);
    cleanup.push(database.drop);
    // Admitted, claimed by a worker that logged the model's answer and then died.
    const before: TestApp = await startTestApp(backend, { database: database.open });
    const { run } = await admit(before.client, { question: "What is 6 × 7?" });
    const runId = idOfType(run.id, "Run")!;
    const admitted = await before.app.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    await appendRows(unfenced(before.app.db.prisma), {
      conversationId: admitted.conversationId,
      runId,
      entries: [
        { role: "USER", content: admitted.question },
        { role: "ASSISTANT", content: "42, as logged before the crash.", toolCalls: [] },
      ],
    });
    await before.app.db.prisma.run.update({
      where: { id: runId },
      data: { status: "RUNNING", attempt: 1, leaseOwner: "dead-worker", leaseExpiresAt: new Date(Date.now() - 1_000), startedAt: new Date() },
    });
    await before.close();

    const model = new ScriptedModel({ name: "must-not-answer", steps: [{ content: "a second, different answer" }] });
    const after = await startTestApp(backend, {
      database: database.open,
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-resume-")), leaseMs: 2_000 },
    });
    cleanup.push(() => after.close());
    expect(await settled(after.client, run.id)).toMatchObject({ status: "SUCCEEDED", answer: "42, as logged before the crash." });
    expect(model.requests).toHaveLength(0);
  });
});
