// W10, W12, W13 through the SDK: every checkpoint section keeps who wrote it and what it rests
// on across later revisions, so an owner's partial edit never passes a model's judgement off as
// the owner's, and a revoked source still withholds every section built on it.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import {
  LinkToWorkspaceDocument,
  RevokePublicationVersionDocument,
  UpdateCheckpointDocument,
  type UpdateCheckpointInput,
  WorkspaceCheckpointDocument,
} from "../../sdk/generated/graphql.js";
import { encodeGlobalId } from "../../src/domain/global-id.js";
import type { ChatMessage, ModelRequest } from "../../src/runtime/ports/model.js";
import { type ScriptStep, ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { asks, questionOf } from "../support/requests.js";

const text = (m: ChatMessage) => (typeof m.content === "string" ? m.content : "");
const contextOf = (request: ModelRequest) => request.messages.map(text).find((c) => c.startsWith("<workspace-context>")) ?? "";

/** The publicationId the workspace context lists for a title. */
function listedId(request: ModelRequest, title: string): string {
  const line = contextOf(request)
    .split("\n")
    .find((l) => l.startsWith(`- "${title}" publicationId=`));
  const id = line && /publicationId=(\S+?)[:,]/.exec(line)?.[1];
  if (!id) throw new Error(`"${title}" is not listed in:\n${contextOf(request)}`);
  return id;
}

/** Each run follows the script of its question; `turn` counts the model's earlier replies. */
function scriptedByQuestion(scripts: Record<string, (request: ModelRequest, turn: number) => ScriptStep>): ScriptedModel {
  return new ScriptedModel({
    name: "provenance",
    steps: (request) => {
      const question = questionOf(request.messages.find((m) => m.role === "user")!.content);
      const script = scripts[question];
      if (!script) return { content: `No script for: ${question}` };
      return script(request, request.messages.filter((m) => m.role === "assistant").length);
    },
  });
}

describe.each(backends)("checkpoint provenance on %s", (backend) => {
  const opened: TestApp[] = [];
  afterEach(async () => {
    for (const app of opened.splice(0)) await app.close();
  });

  async function start(model = scriptedByQuestion({})) {
    const app = await startTestApp(backend, {
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 2_000 },
    });
    opened.push(app);
    return app;
  }

  const readCheckpoint = async (client: DossierClient, workspaceId: string) =>
    expectType((await client.request(WorkspaceCheckpointDocument, { workspaceId, first: 10 })).node!, "Workspace");
  const updater = (client: DossierClient, workspaceId: string) => async (input: Omit<UpdateCheckpointInput, "workspaceId">) =>
    (await client.request(UpdateCheckpointDocument, { input: { workspaceId, ...input } })).updateCheckpoint;

  it("an owner resolving one question keeps the model's summary the model's: revoking its source withholds the checkpoint until the owner rewrites what rests on it", async () => {
    const model = scriptedByQuestion({
      "Price the cells": (request, turn) => {
        const base = listedId(request, "Base study");
        if (turn === 0) return { toolCalls: [{ name: "read_material", arguments: { publicationId: base, version: 1 } }] };
        if (turn === 1) {
          const proposal = {
            summary: "Cells cost 90 EUR/kWh.",
            questions: [{ text: "Is the price list current?" }, { text: "Which supplier?" }],
            citedMaterials: [{ publicationId: base, version: 1 }],
          };
          return { toolCalls: [{ name: "propose_checkpoint", arguments: proposal }] };
        }
        return { content: "Priced from the base study." };
      },
      "Look again": () => ({ content: "Looked." }),
      "Add a question": (_request, turn) =>
        turn === 0 ? { toolCalls: [{ name: "propose_checkpoint", arguments: { questions: [{ text: "What about recycling?" }] } }] } : { content: "Added." },
    });
    const t = await start(model);
    const workspace = await createWorkspace(t.client);
    const update = updater(t.client, workspace.id);
    const base = await publish(t.client, { title: "Base study", content: "Cells cost 90 EUR/kWh." });
    const second = await publish(t.client, { title: "Second study", content: "Prices vary by supplier." });
    await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: base.version.publication.id } });
    const pricing = (await admit(t.client, { workspaceId: workspace.id, question: "Price the cells" })).run;
    expect((await settled(t.client, pricing.id)).status).toBe("SUCCEEDED");

    // Revision 1: every section is the model run's, resting on the base study.
    const byModel = { kind: "MODEL_RUN", run: { id: pricing.id } };
    const first = expectType((await readCheckpoint(t.client, workspace.id)).checkpoint!, "Checkpoint");
    expect(first.summaryProvenance).toMatchObject({ section: "SUMMARY", author: byModel });
    expect(first.summaryProvenance!.sources.edges.map((edge) => edge.cursor)).toContain(base.version.id);
    expect(first.questions.map((q) => [q.questionId, q.provenance.author.kind])).toEqual([
      ["q1", "MODEL_RUN"],
      ["q2", "MODEL_RUN"],
    ]);

    // The owner resolves q1 only: q1 becomes the owner's, everything else stays the model's.
    const resolved = expectType(await update({ expectedRevision: 1, questions: [{ id: "q1", status: "RESOLVED" }] }), "UpdateCheckpointSuccess").checkpoint;
    expect(resolved).toMatchObject({ revision: 2, origin: "USER", summary: "Cells cost 90 EUR/kWh." });
    expect(resolved.summaryProvenance).toMatchObject({ author: byModel });
    expect(resolved.summaryProvenance!.sources.edges.map((edge) => edge.cursor)).toContain(base.version.id);
    expect(resolved.questions.map((q) => [q.questionId, q.status, q.provenance.author])).toEqual([
      ["q1", "RESOLVED", { kind: "OWNER", run: null }],
      ["q2", "OPEN", byModel],
    ]);
    expect(resolved.questions[0]!.provenance.sources.edges).toEqual([]);
    expect(resolved.sourceDependencies.edges.map((edge) => edge.node).map((v) => v.id)).toContain(base.version.id);

    // A run told about the checkpoint sees whose judgement each section is.
    const look = (await admit(t.client, { workspaceId: workspace.id, question: "Look again" })).run;
    await settled(t.client, look.id);
    const told = contextOf(model.requests.find((r) => r.messages.some((m) => asks(m, "Look again")))!);
    expect(told).toContain("Summary: Cells cost 90 EUR/kWh. [a model's suggestion]");
    expect(told).toContain("- question q1 [RESOLVED] [the user's decision]: Is the price list current?");
    expect(told).toContain("- question q2 [OPEN] [a model's suggestion]: Which supplier?");

    await t.client.request(RevokePublicationVersionDocument, {
      input: { publicationId: base.version.publication.id, version: 1, reason: "the supplier withdrew the price list" },
    });
    const withheld = expectType((await readCheckpoint(t.client, workspace.id)).checkpoint!, "UnavailableCheckpoint");
    expect(withheld).toMatchObject({ revision: 2, unavailableSource: { id: base.version.id } });
    expect(withheld.reason).toContain("the supplier withdrew the price list");
    expect(withheld.withheldSections.map((s) => [s.section, s.questionId, s.author])).toEqual([
      ["SUMMARY", null, byModel],
      ["QUESTION", "q2", byModel],
    ]);
    expect(JSON.stringify(withheld)).not.toContain("90 EUR/kWh");

    // Rewriting the summary on an eligible source is not enough while q2 still rests on the revoked one.
    const rewritten = expectType(
      await update({ expectedRevision: 2, summary: "Price unknown since the list was withdrawn.", questions: [], sources: [second.version.id] }),
      "UpdateCheckpointSuccess",
    ).checkpoint;
    expect(rewritten.summaryProvenance).toMatchObject({ author: { kind: "OWNER" }, sources: { edges: [{ cursor: second.version.id }] } });
    const still = expectType((await readCheckpoint(t.client, workspace.id)).checkpoint!, "UnavailableCheckpoint");
    expect(still.withheldSections.map((s) => [s.section, s.questionId])).toEqual([["QUESTION", "q2"]]);

    // Changing q2's text makes it the owner's, resting on nothing: the checkpoint is available again.
    expectType(await update({ expectedRevision: 3, questions: [{ id: "q2", text: "Which supplier, now?" }] }), "UpdateCheckpointSuccess");
    const recovered = await readCheckpoint(t.client, workspace.id);
    const available = expectType(recovered.checkpoint!, "Checkpoint");
    expect(available).toMatchObject({
      revision: 4,
      summary: "Price unknown since the list was withdrawn.",
      sourceDependencies: { edges: [{ node: { id: second.version.id } }] },
    });
    expect(available.questions.map((q) => q.provenance.author.kind)).toEqual(["OWNER", "OWNER"]);
    expect(recovered.checkpointVersions.map((v) => [v.revision, v.__typename])).toEqual([
      [4, "Checkpoint"],
      [3, "UnavailableCheckpoint"],
      [2, "UnavailableCheckpoint"],
      [1, "UnavailableCheckpoint"],
    ]);

    // A model's later suggestion owns only what it writes; the owner's sections stay the owner's.
    const adding = (await admit(t.client, { workspaceId: workspace.id, question: "Add a question" })).run;
    expect((await settled(t.client, adding.id)).status).toBe("SUCCEEDED");
    const latest = expectType((await readCheckpoint(t.client, workspace.id)).checkpoint!, "Checkpoint");
    expect(latest).toMatchObject({ revision: 5, origin: "MODEL_SUGGESTION", summaryProvenance: { author: { kind: "OWNER" } } });
    expect(latest.questions.map((q) => [q.questionId, q.provenance.author])).toEqual([
      ["q1", { kind: "OWNER", run: null }],
      ["q2", { kind: "OWNER", run: null }],
      ["q3", { kind: "MODEL_RUN", run: { id: adding.id } }],
    ]);
    // The model was shown revision 4, so what it wrote rests on that revision's sources too.
    expect(latest.questions[2]!.provenance.sources.edges.map((edge) => edge.cursor)).toContain(second.version.id);
  }, 120_000);

  it("an owner edit naming an unknown, foreign or revoked source, or sources for nothing it writes, is refused and writes nothing", async () => {
    const t = await start();
    const workspace = await createWorkspace(t.client);
    const update = updater(t.client, workspace.id);
    expectType(await update({ expectedRevision: 0, summary: "Start", questions: [{ text: "Open?" }] }), "UpdateCheckpointSuccess");
    const bob = t.as(await t.createPrincipal("Bob"));
    const foreign = await publish(bob, { title: "Bob's notes", content: "private" });
    const revoked = await publish(t.client, { title: "Withdrawn", content: "old" });
    await t.client.request(RevokePublicationVersionDocument, { input: { publicationId: revoked.version.publication.id, version: 1, reason: "wrong figures" } });
    const mine = await publish(t.client, { title: "Mine", content: "fine" });

    const unknown = await update({ expectedRevision: 1, summary: "New", questions: [], sources: [encodeGlobalId("PublicationVersion", "no-such-version")] });
    expect(unknown).toMatchObject({ __typename: "NotFoundError" });
    const others = await update({ expectedRevision: 1, summary: "New", questions: [], sources: [mine.version.id, foreign.version.id] });
    expect(others).toMatchObject({ __typename: "NotFoundError" });
    const ineligible = expectType(await update({ expectedRevision: 1, summary: "New", questions: [], sources: [revoked.version.id] }), "IneligibleSourceError");
    expect(ineligible).toMatchObject({ sourceId: revoked.version.id, eligibilityReason: '"Withdrawn" version 1 was revoked: wrong figures' });
    const notAVersion = expectType(await update({ expectedRevision: 1, summary: "New", questions: [], sources: [workspace.id] }), "ValidationError");
    expect(notAVersion.issues).toEqual([{ field: "sources.0", message: "is not a PublicationVersion id" }]);
    // Resending the summary unchanged writes no section, so the sources would rest under nothing.
    const forNothing = expectType(await update({ expectedRevision: 1, summary: "Start", questions: [], sources: [mine.version.id] }), "ValidationError");
    expect(forNothing.issues).toEqual([{ field: "sources", message: "name sources only with a section this update writes: it keeps every section as it was" }]);

    const after = await readCheckpoint(t.client, workspace.id);
    expect(after.checkpointRevision).toBe(1);
    expect(after.checkpointVersions.map((v) => v.revision)).toEqual([1]);
    expect(expectType(after.checkpoint!, "Checkpoint")).toMatchObject({ summary: "Start", sourceDependencies: { edges: [] } });
  });

  it("of two concurrent owner edits naming sources exactly one wins, and the revision holds only the winner's sections", async () => {
    const t = await start();
    const workspace = await createWorkspace(t.client);
    const update = updater(t.client, workspace.id);
    expectType(await update({ expectedRevision: 0, summary: "Start", questions: [{ text: "Open?" }] }), "UpdateCheckpointSuccess");
    const [a, b] = [await publish(t.client, { title: "A", content: "a" }), await publish(t.client, { title: "B", content: "b" })];
    const results = await Promise.all([
      update({ expectedRevision: 1, summary: "From A", questions: [], sources: [a.version.id] }),
      update({ expectedRevision: 1, questions: [{ id: "q1", status: "RESOLVED" }], sources: [b.version.id] }),
    ]);
    expect(results.map((r) => r.__typename).sort()).toEqual(["StaleRevisionError", "UpdateCheckpointSuccess"]);
    const winner = results.findIndex((r) => r.__typename === "UpdateCheckpointSuccess");
    const current = expectType((await readCheckpoint(t.client, workspace.id)).checkpoint!, "Checkpoint");
    expect(current.revision).toBe(2);
    expect(current.sourceDependencies.edges.map((edge) => edge.node).map((v) => v.id)).toEqual([[a, b][winner]!.version.id]);
    if (winner === 0) {
      expect(current).toMatchObject({ summary: "From A", questions: [{ status: "OPEN", provenance: { sources: { edges: [] } } }] });
    } else {
      expect(current).toMatchObject({
        summary: "Start",
        summaryProvenance: { sources: { edges: [] } },
        questions: [{ status: "RESOLVED", provenance: { sources: { edges: [{ cursor: b.version.id }] } } }],
      });
    }
  });
});
