// A person's score of an exact version is part of the research record (issue 39): the next run
// in the workspace sees it where the version is listed (the workspace context, list_history) and
// where it is read (read_material) — config, value or label, by whom — and only for that version;
// model and code scores are not shown as people's judgements. Scores also reach the owner's
// webhooks (SCORE_CREATED).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  CreateScoreConfigDocument,
  CreateScoreDocument,
  CreateWebhookDocument,
  HistoryCatalogDocument,
  LinkToWorkspaceDocument,
  TargetScoresDocument,
} from "../../sdk/generated/graphql.js";
import type { ChatMessage } from "../../src/runtime/ports/model.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { startReceiver, type Receiver } from "../support/webhook-receiver.js";

describe.each(backends)("scores as provenance on %s", (backend) => {
  let t: TestApp | undefined;
  let receiver: Receiver | undefined;
  afterEach(async () => {
    await t?.close();
    await receiver?.close();
    t = undefined;
    receiver = undefined;
  });

  it("shows the next run the human scores of the exact version it lists and reads, and tells the owner's webhook", async () => {
    receiver = await startReceiver();
    const model = toolCallingModel("scores");
    t = await startTestApp(backend, {
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-scores-")), leaseMs: 2_000 },
      webhooks: { deliver: true, allowedHosts: [receiver.host], pollMs: 100 },
    });
    const { client } = t;
    const { secret } = expectType(
      (await client.request(CreateWebhookDocument, { input: { url: receiver.url, events: ["SCORE_CREATED"] } })).createWebhook,
      "CreateWebhookSuccess",
    );
    const workspace = await createWorkspace(client);
    const first = await publish(client, { title: "Battery report", content: "Capacity 2027: 1.2 TWh." });
    const publicationId = first.version.publication.id;
    const second = await publish(client, { publicationId, content: "Capacity 2027: 1.4 TWh." });
    await client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: publicationId } });

    for (const input of [
      { name: "accuracy", kind: "NUMERIC" as const, min: 1, max: 5 },
      { name: "verdict", kind: "CATEGORICAL" as const, categories: ["right", "wrong"] },
    ]) {
      expectType((await client.request(CreateScoreConfigDocument, { input })).createScoreConfig, "CreateScoreConfigSuccess");
    }
    const scoreV1 = async (input: { configName: string; value?: number; label?: string; source: "HUMAN" | "MODEL" }, targetId = first.version.id) =>
      expectType((await client.request(CreateScoreDocument, { input: { targetId, ...input } })).createScore, "CreateScoreSuccess").score;
    const human = await scoreV1({ configName: "accuracy", value: 2, source: "HUMAN" });
    await scoreV1({ configName: "verdict", label: "wrong", source: "HUMAN" });
    await scoreV1({ configName: "accuracy", value: 5, source: "MODEL" });
    expect(human.createdBy.name).toBeTruthy();

    // The webhook hears the score, signed, with its global ids and no comment text.
    await vi.waitFor(() => expect(receiver!.received.length).toBeGreaterThanOrEqual(3), { timeout: 10_000 });
    const event = receiver.verify(receiver.received[0]!, secret) as { type: string; data: Record<string, unknown> };
    expect(event).toMatchObject({
      type: "SCORE_CREATED",
      data: { scoreId: human.id, targetId: first.version.id, targetType: "PublicationVersion", configName: "accuracy", value: 2, source: "HUMAN" },
    });

    // The run lists the history, then reads version 1: the answer is the tools' results as the model saw them.
    const run = (
      await admit(client, {
        workspaceId: workspace.id,
        question: callToolsInTurns([{ name: "list_history" }], [{ name: "read_material", arguments: { publicationId, version: 1 } }]),
      })
    ).run;
    const done = await settled(client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    const by = JSON.stringify(human.createdBy.name);
    const [listed, read] = done.answer!.split("\n---\n");
    const v1Line = listed!.split("\n").find((line) => line.startsWith('- "Battery report"'))!;
    expect(v1Line).toContain(`v1 as of ${first.version.asOf} [human scores: verdict=wrong by ${by}, accuracy=2 by ${by}]`);
    // Version 2 has no scores of its own; the MODEL score is not shown as a person's.
    expect(v1Line).toMatch(/v2 as of [^;[]+;/);
    expect(v1Line).not.toContain("accuracy=5");
    expect(read).toContain(`People judged this version: human scores: verdict=wrong by ${by}, accuracy=2 by ${by}.`);
    // The workspace context the run started with lists the same.
    const context = (model.requests[0]!.messages as ChatMessage[]).map((m) => (typeof m.content === "string" ? m.content : "")).join("\n");
    expect(context).toContain("[human scores: verdict=wrong by");

    // The catalog in the graph says the same, and PublicationVersion.scores shows who judged which version.
    const catalog = expectType((await client.request(HistoryCatalogDocument, { workspaceId: workspace.id })).node!, "Workspace").historyCatalog;
    const versions = catalog.entries.find((entry) => entry.title === "Battery report")!.versions;
    expect(versions.map((v) => [v.version, v.humanScoreCount, v.humanScores.map((s) => `${s.configName}=${s.label ?? s.value}`)])).toEqual([
      [2, 0, []],
      [1, 2, ["verdict=wrong", "accuracy=2"]],
    ]);
    const judged = (await client.request(TargetScoresDocument, { id: second.version.id })).node;
    expect(judged).toMatchObject({ __typename: "PublicationVersion", scores: { totalCount: 0 } });
  });
});
