// What webhooks report about runs and research (issue 22), delivered to a real receiver: a run
// that succeeded, failed, waits for a tool-call decision, was cancelled or reached its deadline
// while waiting; a checkpoint revision; a publication version; a score. Only the owner's webhooks hear of
// their objects, only the types they listen for, and no body (answer, content) is ever sent.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import {
  CancelRunDocument,
  CreateScoreConfigDocument,
  CreateScoreDocument,
  CreateWebhookDocument,
  UpdateCheckpointDocument,
  type WebhookEventType,
} from "../../sdk/generated/graphql.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { callTools, callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { type Receiver, startReceiver, ALL } from "../support/webhook-receiver.js";

const SECRET_TEXT = "the confidential report body";

const reportTool: Tool = {
  schema: { name: "write_report", description: "writes a report", parameters: { type: "object" } },
  execute: async () => SECRET_TEXT,
};
const notesTool: Tool = {
  schema: { name: "read_notes", description: "reads notes", parameters: { type: "object" } },
  execute: async () => SECRET_TEXT,
};

describe.each(backends)("webhook events of runs and research on %s", (backend) => {
  let t: TestApp | undefined;
  const receivers: Receiver[] = [];
  afterEach(async () => {
    await t?.close();
    t = undefined;
    for (const receiver of receivers.splice(0)) await receiver.close();
  });

  async function hook(client: DossierClient, receiver: Receiver, events: WebhookEventType[]) {
    const created = await client.request(CreateWebhookDocument, { input: { url: receiver.url, events } });
    return expectType(created.createWebhook, "CreateWebhookSuccess").secret;
  }

  it("reports each run ending, waiting and each research change to the owner's webhooks only, without bodies", async () => {
    const [everything, successes, bobs] = [await startReceiver(), await startReceiver(), await startReceiver()];
    receivers.push(everything, successes, bobs);
    t = await startTestApp(backend, {
      authRequired: true,
      webhooks: { deliver: true, allowedHosts: receivers.map((r) => r.host), retryDelaysSeconds: [0.2], pollMs: 100 },
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-webhook-runs-")),
        extraTools: [reportTool, notesTool],
        leaseMs: 1_500,
        sweepMs: 100,
        approvals: { rules: { read_notes: "always", "*": "never" } },
      },
    });
    const alice = t.as(await t.createPrincipal("Alice"));
    const bob = t.as(await t.createPrincipal("Bob"));
    const secret = await hook(alice, everything, ALL);
    const successSecret = await hook(alice, successes, ["RUN_SUCCEEDED"]);
    await hook(bob, bobs, ALL);
    const workspace = await createWorkspace(alice);

    const { run: succeeded } = await admit(alice, { workspaceId: workspace.id, question: callTools({ name: "write_report" }) });
    expect((await settled(alice, succeeded.id)).status).toBe("SUCCEEDED");
    const { run: failed } = await admit(alice, {
      question: callToolsInTurns([{ name: "write_report" }], [{ name: "write_report" }], [{ name: "write_report" }]),
      limits: { maxTurns: 1 },
    });
    expect((await settled(alice, failed.id)).status).toBe("FAILED");
    const { run: cancelled } = await admit(alice, { question: callTools({ name: "read_notes" }) });
    await vi.waitFor(() => expect(events(everything, secret).map((e) => e.type)).toContain("RUN_WAITING"), { timeout: 20_000 });
    expectType((await alice.request(CancelRunDocument, { input: { runId: cancelled.id } })).cancelRun, "CancelRunSuccess");
    const { run: timedOut } = await admit(alice, { question: callTools({ name: "read_notes" }), limits: { deadlineSeconds: 6 } });
    // Long enough to reach WAITING first on a loaded machine; the sweep ends it while it waits.
    expect((await settled(alice, timedOut.id, 30_000)).status).toBe("TIMED_OUT");
    const checkpoint = await alice.request(UpdateCheckpointDocument, {
      input: { workspaceId: workspace.id, expectedRevision: 0, summary: SECRET_TEXT, questions: [] },
    });
    expectType(checkpoint.updateCheckpoint, "UpdateCheckpointSuccess");
    const published = await publish(alice, { title: "Cells", content: SECRET_TEXT });
    // A person's score of the version: the comment stays out of the body too.
    expectType((await alice.request(CreateScoreConfigDocument, { input: { name: "sound", kind: "BOOLEAN" } })).createScoreConfig, "CreateScoreConfigSuccess");
    const scored = await alice.request(CreateScoreDocument, {
      input: { targetId: published.version.id, configName: "sound", label: "true", source: "HUMAN", comment: SECRET_TEXT },
    });
    const score = expectType(scored.createScore, "CreateScoreSuccess").score;

    const expected = [
      ["RUN_SUCCEEDED", { runId: succeeded.id, workspaceId: workspace.id, status: "SUCCEEDED", summary: "the run succeeded" }],
      // The run's answer, published as it settled: in the same commit as its status.
      ["PUBLICATION_VERSION_CREATED", { runId: succeeded.id, version: 1 }],
      ["RUN_FAILED", { runId: failed.id, workspaceId: null, status: "FAILED" }],
      ["RUN_WAITING", { runId: cancelled.id, status: "WAITING" }],
      ["RUN_CANCELLED", { runId: cancelled.id, status: "CANCELLED", summary: "the run was cancelled" }],
      ["RUN_WAITING", { runId: timedOut.id, status: "WAITING" }],
      ["RUN_TIMED_OUT", { runId: timedOut.id, status: "TIMED_OUT", summary: "the run reached its deadline" }],
      ["CHECKPOINT_UPDATED", { workspaceId: workspace.id, revision: 1 }],
      ["PUBLICATION_VERSION_CREATED", { publicationId: published.version.publication.id, versionId: published.version.id, version: 1 }],
      ["SCORE_CREATED", { scoreId: score.id, targetId: published.version.id, targetType: "PublicationVersion", configName: "sound", value: 1, label: "true" }],
    ] as const;
    await vi.waitFor(() => expect(everything.received).toHaveLength(expected.length), { timeout: 20_000 });
    const heard = events(everything, secret);
    for (const [type, data] of expected)
      expect(
        heard.find((e) => e.type === type && matches(e.data, data)),
        `${type} ${JSON.stringify(data)}`,
      ).toBeDefined();
    for (const event of heard) expect(event.data.summary).toEqual(expect.any(String));
    for (const request of everything.received) expect(request.body).not.toContain("confidential");
    expect(heard.find((e) => e.type === "RUN_FAILED")!.data.summary).toMatch(/^the run failed \(\w+\)$/);

    // The webhook for successes heard only the success; Bob's heard nothing of Alice's objects.
    await vi.waitFor(() => expect(successes.received).toHaveLength(1));
    expect(events(successes, successSecret).map((e) => e.type)).toEqual(["RUN_SUCCEEDED"]);
    expect(bobs.received).toHaveLength(0);
  });
});

function events(receiver: Receiver, secret: string) {
  return receiver.received.map((request) => receiver.verify(request, secret));
}

function matches(data: Record<string, unknown>, expected: Record<string, unknown>): boolean {
  return Object.entries(expected).every(([key, value]) => data[key] === value);
}
