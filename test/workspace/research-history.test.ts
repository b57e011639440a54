// W6–W13, R15 through the SDK: runs read exact earlier versions, the ledger separates found,
// read and consumed, answers are published from consumed sources, and checkpoints move only
// by compare-and-swap — and all of it reads back the same after a restart.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import {
  ArchiveWorkspaceDocument,
  DeleteWorkspaceDocument,
  HistoryCatalogDocument,
  LinkToWorkspaceDocument,
  PublicationVersionUsesDocument,
  ReadMaterialDocument,
  RevokePublicationVersionDocument,
  RunMaterialsDocument,
  UpdateCheckpointDocument,
  type UpdateCheckpointInput,
  WorkspaceCheckpointDocument,
  WorkspaceLinksDocument,
} from "../../sdk/generated/graphql.js";
import type { ChatMessage, ModelRequest } from "../../src/runtime/ports/model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { type ScriptStep, ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends, createPersistentTestDatabase } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { questionOf } from "../support/requests.js";

type Script = (request: ModelRequest, turn: number) => ScriptStep;

/** Routes each model request to the script of the run whose question opens its conversation. */
function scriptedByQuestion(scripts: Record<string, Script>): ScriptedModel {
  return new ScriptedModel({
    name: "history",
    steps: (request) => {
      const question = questionOf(request.messages.find((m) => m.role === "user")!.content);
      const script = scripts[question];
      if (!script) return { content: `No script for: ${question}` };
      const turn = request.messages.filter((m) => m.role === "assistant").length;
      return script(request, turn);
    },
  });
}

const text = (m: ChatMessage) => (typeof m.content === "string" ? m.content : "");
const requestText = (request: ModelRequest) => request.messages.map(text).join("\n");
const workspaceContext = (request: ModelRequest) => request.messages.map(text).find((c) => c.startsWith("<workspace-context>")) ?? "";

/** The publicationId the workspace context lists for a title. */
function listedId(request: ModelRequest, title: string): string {
  const line = workspaceContext(request)
    .split("\n")
    .find((l) => l.startsWith(`- "${title}" publicationId=`));
  const id = line && /publicationId=(\S+?)[:,]/.exec(line)?.[1];
  if (!id) throw new Error(`"${title}" is not listed in:\n${workspaceContext(request)}`);
  return id;
}

/** A tool that holds its run until the test opens the gate of the same name. */
function gates() {
  const open = new Map<string, () => void>();
  const opened = new Map<string, Promise<void>>();
  const gate = (name: string) => {
    if (!opened.has(name)) opened.set(name, new Promise<void>((resolve) => open.set(name, resolve)));
    return opened.get(name)!;
  };
  const tool: Tool = {
    schema: { name: "wait_for_gate", description: "waits for the test", parameters: { type: "object" } },
    execute: async (args) => {
      await gate((args as { name: string }).name);
      return "gate opened";
    },
  };
  return { tool, release: (name: string) => (gate(name), open.get(name)!()) };
}

const readCall = (publicationId: string, version: number) => ({ name: "read_material", arguments: { publicationId, version } });

describe.each(backends)("research history on %s", (backend) => {
  const opened: TestApp[] = [];
  const drops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const app of opened.splice(0)) await app.close();
    for (const drop of drops.splice(0)) await drop();
  });

  async function start(
    model: ScriptedModel,
    database?: () => ReturnType<Awaited<ReturnType<typeof createPersistentTestDatabase>>["open"]>,
    extraTools: Tool[] = [],
  ) {
    const app = await startTestApp(backend, {
      database,
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 2_000, extraTools },
    });
    opened.push(app);
    return app;
  }

  async function settled(client: DossierClient, runId: string, timeoutMs = 20_000) {
    return vi.waitFor(
      async () => {
        const run = (await client.request(RunMaterialsDocument, { id: runId })).run!;
        if (["QUEUED", "RUNNING"].includes(run.status)) throw new Error(`run still ${run.status}`);
        return run;
      },
      { timeout: timeoutMs, interval: 25 },
    );
  }

  const materials = async (client: DossierClient, runId: string) => (await client.request(RunMaterialsDocument, { id: runId })).run!;
  const stagesOf = (uses: { stage: string; publicationId: string | null; version: number | null }[], publicationId: string, version: number) =>
    uses.filter((u) => u.publicationId === publicationId && u.version === version).map((u) => u.stage);

  it("the fund scenario: a run reads A@v1 (not the newer v2) and B@v1, consumes exactly those, publishes from them, and it all survives a restart", async () => {
    const database = await createPersistentTestDatabase(backend);
    drops.push(database.drop);
    let firstRequest: ModelRequest | undefined;
    const model = scriptedByQuestion({
      "Report on fund A": () => ({ content: "Fund A: fees 1.2%, strong 2025 returns." }),
      "Report on fund B": () => ({ content: "Fund B: fees 0.4%, index tracker." }),
      "Compare the funds as they were judged then": (request, turn) => {
        if (turn === 0) {
          firstRequest = request;
          const a = listedId(request, "Answer: Report on fund A");
          const b = listedId(request, "Answer: Report on fund B");
          return { toolCalls: [readCall(a, 1), readCall(b, 1)] };
        }
        if (turn === 1) {
          const a = listedId(request, "Answer: Report on fund A");
          const b = listedId(request, "Answer: Report on fund B");
          return {
            toolCalls: [
              {
                name: "propose_checkpoint",
                arguments: {
                  summary: "A is costlier than B as judged in the first reports.",
                  questions: [{ text: "Is fund A's fee still 1.2%?" }],
                  nextSteps: ["Check A's 2026 fee schedule"],
                  citedMaterials: [
                    { publicationId: a, version: 1 },
                    { publicationId: b, version: 1 },
                  ],
                },
              },
            ],
          };
        }
        return { content: "As judged then: A charged 1.2%, B 0.4%; B is cheaper." };
      },
    });
    let t = await start(model, database.open);
    const workspace = await createWorkspace(t.client, "Choose a fund for the pension");

    const runA = (await admit(t.client, { workspaceId: workspace.id, question: "Report on fund A" })).run;
    const runB = (await admit(t.client, { workspaceId: workspace.id, question: "Report on fund B" })).run;
    const [doneA, doneB] = [await settled(t.client, runA.id), await settled(t.client, runB.id)];
    expect([doneA.status, doneB.status]).toEqual(["SUCCEEDED", "SUCCEEDED"]);
    const reportA = (await materials(t.client, runA.id)).acceptedPublicationVersions.edges.map((edge) => edge.node)[0]!;
    const reportB = (await materials(t.client, runB.id)).acceptedPublicationVersions.edges.map((edge) => edge.node)[0]!;
    expect(reportA).toMatchObject({ version: 1, content: "Fund A: fees 1.2%, strong 2025 returns.", originRun: { id: runA.id } });
    const aV2 = await publish(t.client, { publicationId: reportA.publication.id, content: "Fund A v2: fees cut to 0.9%." });
    const unread = await publish(t.client, { title: "Fund C teaser", content: "Fund C launches in 2027." });
    await t.client.request(LinkToWorkspaceDocument, {
      input: { workspaceId: workspace.id, targetId: unread.version.publication.id },
    });

    const catalog = expectType((await t.client.request(HistoryCatalogDocument, { workspaceId: workspace.id })).node!, "Workspace").historyCatalog;
    expect(catalog.complete).toBe(true);
    expect(catalog.entries.map((e) => [e.title, e.versions.map((v) => v.version), e.via])).toEqual(
      expect.arrayContaining([
        ["Answer: Report on fund A", [2, 1], ["LINKED_PUBLICATION", "LINKED_RUN"]],
        ["Answer: Report on fund B", [1], ["LINKED_PUBLICATION", "LINKED_RUN"]],
        ["Fund C teaser", [1], ["LINKED_PUBLICATION"]],
      ]),
    );
    expect(JSON.stringify(catalog)).not.toContain("fees");

    const run = (await admit(t.client, { workspaceId: workspace.id, question: "Compare the funds as they were judged then" })).run;
    const done = await settled(t.client, run.id);
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: "As judged then: A charged 1.2%, B 0.4%; B is cheaper." });

    // The first request names the materials with versions and as-of times, never their content.
    const context = workspaceContext(firstRequest!);
    expect(context).toContain("Goal (version 1");
    expect(context).toContain("v2 as of");
    expect(requestText(firstRequest!)).not.toMatch(/fees/);
    // The second request carries exactly A@v1 and B@v1.
    const second = model.requests.find((r) => r.messages.some((m) => m.role === "tool" && text(m).includes("<material")))!;
    const toolTexts = second.messages.filter((m) => m.role === "tool").map(text);
    expect(toolTexts.some((c) => c.includes("Fund A: fees 1.2%") && c.includes('version="1"'))).toBe(true);
    expect(toolTexts.some((c) => c.includes("Fund B: fees 0.4%"))).toBe(true);
    expect(requestText(second)).not.toContain("fees cut to 0.9%");

    const view = async (client: DossierClient) => {
      const ledger = await materials(client, run.id);
      const trace = (await client.runTrace(run.id))!.trace!;
      const checkpoint = expectType((await client.request(WorkspaceCheckpointDocument, { workspaceId: workspace.id })).node!, "Workspace");
      const usesOfAv1 = (await client.request(PublicationVersionUsesDocument, { id: reportA.id })).node;
      const links = (await client.request(WorkspaceLinksDocument, { workspaceId: workspace.id, first: 50 })).workspace!.links;
      return { ledger, modelSpans: trace.spans.filter((s) => s.kind === "MODEL_CALL").map((s) => s.id), checkpoint, usesOfAv1, links };
    };
    const before = await view(t.client);
    const consumed = before.ledger.materialUses.edges.map((edge) => edge.node).filter((u) => u.stage === "CONSUMED");
    expect(consumed.map((u) => [u.publicationId, u.version])).toEqual(
      expect.arrayContaining([
        [reportA.publication.id, 1],
        [reportB.publication.id, 1],
      ]),
    );
    expect(consumed).toHaveLength(2);
    expect(consumed.every((u) => u.requestSpan?.kind === "MODEL_CALL" && u.requestSpan.id === before.modelSpans[1])).toBe(true);
    expect(consumed.find((u) => u.publicationId === reportA.publication.id)!.contentHash).toBe(reportA.contentHash);
    // Found is not used: A@v2 and the teaser were listed and never read.
    expect(
      stagesOf(
        before.ledger.materialUses.edges.map((edge) => edge.node),
        reportA.publication.id,
        2,
      ),
    ).toEqual(["DISCOVERED"]);
    expect(
      stagesOf(
        before.ledger.materialUses.edges.map((edge) => edge.node),
        unread.version.publication.id,
        1,
      ),
    ).toEqual(["DISCOVERED"]);
    expect(
      stagesOf(
        before.ledger.materialUses.edges.map((edge) => edge.node),
        reportA.publication.id,
        1,
      ),
    ).toEqual(["DISCOVERED", "SELECTED", "READ", "CONSUMED"]);
    expect(aV2.version.version).toBe(2);

    // The answer is a new publication version built on the consumed versions, linked to the workspace.
    const [answer] = before.ledger.acceptedPublicationVersions.edges.map((edge) => edge.node);
    expect(answer!.content).toBe(done.answer);
    expect(answer!.sources.map((s) => [s.publication.id, s.version])).toEqual(
      expect.arrayContaining([
        [reportA.publication.id, 1],
        [reportB.publication.id, 1],
      ]),
    );
    expect(before.links.edges.map((e) => e.node.target?.__typename === "Publication" && e.node.target.id)).toContain(answer!.publication.id);
    expect(
      expectType(before.usesOfAv1!, "PublicationVersion")
        .consumedBy.edges.map((edge) => edge.node)
        .map((u) => u.run.id),
    ).toEqual([run.id]);

    // The run's checkpoint proposal was accepted as revision 1, marked as a model suggestion.
    const checkpoint = expectType(before.checkpoint.checkpoint!, "Checkpoint");
    expect(checkpoint).toMatchObject({
      revision: 1,
      origin: "MODEL_SUGGESTION",
      modelSuggestion: true,
      originRun: { id: run.id },
      questions: [{ questionId: "q1", text: "Is fund A's fee still 1.2%?", status: "OPEN" }],
      acceptedPublicationVersions: { edges: [{ node: { id: answer!.id } }] },
    });
    expect(checkpoint.citedMaterials.map((v) => v.id).sort()).toEqual([reportA.id, reportB.id].sort());

    await t.close();
    opened.splice(opened.indexOf(t), 1);
    t = await start(model, database.open);
    expect(await view(t.client)).toEqual(before);
  });

  it("revoking a source makes reads and the checkpoint built on it UNAVAILABLE, and a run that meets it still succeeds", async () => {
    const model = scriptedByQuestion({
      "Build on the base study": (request, turn) =>
        turn === 0
          ? { toolCalls: [readCall(listedId(request, "Base study"), 1)] }
          : turn === 1
            ? {
                toolCalls: [
                  {
                    name: "propose_checkpoint",
                    arguments: { summary: "Base study holds.", citedMaterials: [{ publicationId: listedId(request, "Base study"), version: 1 }] },
                  },
                ],
              }
            : { content: "Built on the base study." },
      "Use the base study again": (request, turn) =>
        turn === 0 ? { toolCalls: [readCall(listedId(request, "Base study"), 1)] } : { content: "The base study is unavailable; no conclusion." },
    });
    const t = await start(model);
    const workspace = await createWorkspace(t.client);
    const base = await publish(t.client, { title: "Base study", content: "Cells cost 90 EUR/kWh." });
    await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: base.version.publication.id } });
    const first = (await admit(t.client, { workspaceId: workspace.id, question: "Build on the base study" })).run;
    expect((await settled(t.client, first.id)).status).toBe("SUCCEEDED");
    const derived = (await materials(t.client, first.id)).acceptedPublicationVersions.edges.map((edge) => edge.node)[0]!;
    const readBack = async (publicationId: string, version: number) => (await t.client.request(ReadMaterialDocument, { publicationId, version })).readMaterial;
    expect(await readBack(derived.publication.id, 1)).toMatchObject({ status: "AVAILABLE", publicationVersion: { content: "Built on the base study." } });

    const revoked = await t.client.request(RevokePublicationVersionDocument, {
      input: { publicationId: base.version.publication.id, version: 1, reason: "the supplier withdrew the price list" },
    });
    expect(expectType(revoked.revokePublicationVersion, "RevokePublicationVersionSuccess").publicationVersion.availability.status).toBe("UNAVAILABLE");

    expect(await readBack(base.version.publication.id, 1)).toEqual({
      status: "UNAVAILABLE",
      reason: '"Base study" version 1 was revoked: the supplier withdrew the price list',
      publicationVersion: null,
    });
    // Built on it, transitively: the run's published answer.
    expect((await readBack(derived.publication.id, 1)).reason).toBe(
      'it depends on "Base study" version 1, which was revoked: the supplier withdrew the price list',
    );
    const checkpoint = expectType((await t.client.request(WorkspaceCheckpointDocument, { workspaceId: workspace.id })).node!, "Workspace").checkpoint!;
    expect(checkpoint).toMatchObject({ __typename: "UnavailableCheckpoint", status: "UNAVAILABLE", revision: 1, unavailableSource: { id: base.version.id } });
    expect(JSON.stringify(checkpoint)).not.toContain("Base study holds");

    const second = (await admit(t.client, { workspaceId: workspace.id, question: "Use the base study again" })).run;
    const secondDone = await settled(t.client, second.id);
    expect(secondDone).toMatchObject({ status: "SUCCEEDED", answer: "The base study is unavailable; no conclusion." });
    const uses = (await materials(t.client, second.id)).materialUses.edges.map((edge) => edge.node);
    expect(stagesOf(uses, base.version.publication.id, 1)).toEqual(["DISCOVERED", "SELECTED", "UNAVAILABLE"]);
    expect(uses.find((u) => u.stage === "UNAVAILABLE")!.reason).toContain("revoked");
    const told = model.requests
      .at(-1)!
      .messages.filter((m) => m.role === "tool")
      .map(text);
    expect(told.some((c) => c.startsWith("UNAVAILABLE:") && c.includes("the supplier withdrew the price list"))).toBe(true);
    expect(JSON.stringify(model.requests.at(-1)!.messages)).toContain("Checkpoint revision 1 is UNAVAILABLE");

    // The owner's own update is their judgement, resting on nothing revoked: readable again.
    await t.client.request(UpdateCheckpointDocument, {
      input: { workspaceId: workspace.id, expectedRevision: 1, summary: "Base study withdrawn; price unknown.", questions: [] },
    });
    const recovered = expectType((await t.client.request(WorkspaceCheckpointDocument, { workspaceId: workspace.id })).node!, "Workspace");
    expect(recovered.checkpoint).toMatchObject({
      __typename: "Checkpoint",
      revision: 2,
      summary: "Base study withdrawn; price unknown.",
      sourceDependencies: { edges: [] },
    });
    expect(recovered.checkpointVersions.map((v) => [v.revision, v.__typename])).toEqual([
      [2, "Checkpoint"],
      [1, "UnavailableCheckpoint"],
    ]);
  });

  it("a long material is read in parts, never behind a spill preview, and counts as consumed", async () => {
    const long = `Fund D annual report.${" Holdings and fees, line by line.".repeat(2_000)}`;
    const model = scriptedByQuestion({
      "Read the long report": (request, turn) => {
        const id = listedId(request, "Long report");
        if (turn === 0) return { toolCalls: [readCall(id, 1)] };
        if (turn === 1) {
          const offset = Number(/offset=(\d+)/.exec(text(request.messages.at(-1)!))![1]);
          return { toolCalls: [{ name: "read_material", arguments: { publicationId: id, version: 1, offset, maxChars: 100_000 } }] };
        }
        return { content: "Read it all." };
      },
    });
    const t = await start(model);
    const workspace = await createWorkspace(t.client);
    const report = await publish(t.client, { title: "Long report", content: long });
    await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: report.version.publication.id } });
    expect(long.length).toBeGreaterThan(40_000);
    const run = (await admit(t.client, { workspaceId: workspace.id, question: "Read the long report" })).run;
    expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");
    const parts = model.requests
      .at(-1)!
      .messages.filter((m) => m.role === "tool")
      .map(text);
    expect(parts[0]).toContain("This part holds characters 0–16000 of");
    expect(parts[1]).toContain("It is the last part.");
    const body = (part: string) => part.split("\n").slice(3, -1).join("\n");
    expect(body(parts[0]!) + body(parts[1]!)).toBe(long);
    expect(
      stagesOf(
        (await materials(t.client, run.id)).materialUses.edges.map((edge) => edge.node),
        report.version.publication.id,
        1,
      ),
    ).toContain("CONSUMED");
  });

  it("of two concurrent checkpoint updates on one revision exactly one wins, and omitted questions stay OPEN", async () => {
    const t = await start(scriptedByQuestion({}));
    const workspace = await createWorkspace(t.client);
    const update = (input: Omit<UpdateCheckpointInput, "workspaceId">) =>
      t.client.request(UpdateCheckpointDocument, { input: { workspaceId: workspace.id, ...input } });
    const created = expectType(
      (await update({ expectedRevision: 0, summary: "Start", questions: [{ text: "Which cell chemistry?" }, { text: "Which plants?" }] })).updateCheckpoint,
      "UpdateCheckpointSuccess",
    );
    expect(created.checkpoint.questions.map((q) => [q.questionId, q.status])).toEqual([
      ["q1", "OPEN"],
      ["q2", "OPEN"],
    ]);

    const results = await Promise.all([
      update({ expectedRevision: 1, questions: [{ id: "q1", status: "RESOLVED" }] }),
      update({ expectedRevision: 1, summary: "Other view", questions: [{ text: "Who supplies lithium?" }] }),
    ]);
    const typenames = results.map((r) => r.updateCheckpoint.__typename).sort();
    expect(typenames).toEqual(["StaleRevisionError", "UpdateCheckpointSuccess"]);
    const stale = results.map((r) => r.updateCheckpoint).find((p) => p.__typename === "StaleRevisionError")!;
    expect(stale).toMatchObject({ expectedRevision: 1, currentRevision: 2 });

    const resolved = expectType(
      (await update({ expectedRevision: 2, questions: [{ id: "q1", status: "RESOLVED", text: "Which cell chemistry? LFP." }] })).updateCheckpoint,
      "UpdateCheckpointSuccess",
    ).checkpoint;
    expect(resolved.revision).toBe(3);
    expect(resolved.questions.find((q) => q.questionId === "q2")).toMatchObject({ questionId: "q2", text: "Which plants?", status: "OPEN" });
    expect(resolved.questions.find((q) => q.questionId === "q1")!.status).toBe("RESOLVED");

    const unknown = (await update({ expectedRevision: 3, questions: [{ id: "q9", status: "RESOLVED" }] })).updateCheckpoint;
    expect(expectType(unknown, "ValidationError").issues).toEqual([{ field: "questions.0.id", message: 'no question has the id "q9"' }]);
    const versions = expectType((await t.client.request(WorkspaceCheckpointDocument, { workspaceId: workspace.id, first: 10 })).node!, "Workspace");
    expect(versions.checkpointRevision).toBe(3);
    expect(versions.checkpointVersions.map((v) => v.revision)).toEqual([3, 2, 1]);
  });

  it("a stale or invalid proposal is recorded and dropped, and the run still succeeds", async () => {
    const gate = gates();
    const model = scriptedByQuestion({
      "Propose late": (_request, turn) =>
        turn === 0
          ? {
              toolCalls: [
                { name: "propose_checkpoint", arguments: { summary: "Model view", questions: [{ id: "q1", status: "RESOLVED" }] } },
                { name: "wait_for_gate", arguments: { name: "late" } },
              ],
            }
          : { content: "Done." },
      "Propose nonsense": (_request, turn) =>
        turn === 0 ? { toolCalls: [{ name: "propose_checkpoint", arguments: { questions: [{ status: "DONE" }] } }] } : { content: "Done anyway." },
    });
    const t = await start(model, undefined, [gate.tool]);
    const workspace = await createWorkspace(t.client);
    await t.client.request(UpdateCheckpointDocument, { input: { workspaceId: workspace.id, expectedRevision: 0, questions: [{ text: "Open question" }] } });

    const late = (await admit(t.client, { workspaceId: workspace.id, question: "Propose late" })).run;
    // Once the run has proposed against revision 1, the user changes the checkpoint first.
    await expect
      .poll(async () => (await materials(t.client, late.id)).checkpointProposals.edges.map((edge) => edge.node), { timeout: 20_000, interval: 20 })
      .not.toHaveLength(0);
    await t.client.request(UpdateCheckpointDocument, { input: { workspaceId: workspace.id, expectedRevision: 1, summary: "User view", questions: [] } });
    gate.release("late");
    expect(await settled(t.client, late.id)).toMatchObject({ status: "SUCCEEDED", answer: "Done." });
    const [proposal] = (await materials(t.client, late.id)).checkpointProposals.edges.map((edge) => edge.node);
    expect(proposal).toMatchObject({
      status: "STALE",
      expectedRevision: 1,
      revision: null,
      reason: "the checkpoint moved to revision 2 after the run saw revision 1",
    });
    const current = expectType((await t.client.request(WorkspaceCheckpointDocument, { workspaceId: workspace.id })).node!, "Workspace");
    expect(expectType(current.checkpoint!, "Checkpoint")).toMatchObject({
      revision: 2,
      summary: "User view",
      origin: "USER",
      questions: [{ questionId: "q1", text: "Open question", status: "OPEN" }],
    });

    const nonsense = (await admit(t.client, { workspaceId: workspace.id, question: "Propose nonsense" })).run;
    expect(await settled(t.client, nonsense.id)).toMatchObject({ status: "SUCCEEDED", answer: "Done anyway." });
    const [invalid] = (await materials(t.client, nonsense.id)).checkpointProposals.edges.map((edge) => edge.node);
    expect(invalid).toMatchObject({ status: "INVALID" });
    expect(invalid!.reason).toContain("questions.0");
    expect(
      model.requests
        .at(-1)!
        .messages.filter((m) => m.role === "tool")
        .map(text)[0],
    ).toContain("recorded as invalid");
  });

  it("an answer finished after archive or delete is saved but not linked, and the refusal is recorded", async () => {
    const gate = gates();
    const holdThenAnswer =
      (answer: string, name: string): Script =>
      (_r, turn) =>
        turn === 0 ? { toolCalls: [{ name: "wait_for_gate", arguments: { name } }] } : { content: answer };
    const model = scriptedByQuestion({
      "Slow in archived": holdThenAnswer("Archived answer", "archived"),
      "Slow in deleted": holdThenAnswer("Deleted answer", "deleted"),
    });
    const t = await start(model, undefined, [gate.tool]);
    const cases = [
      { question: "Slow in archived", gate: "archived", answer: "Archived answer", reason: "WORKSPACE_ARCHIVED" },
      { question: "Slow in deleted", gate: "deleted", answer: "Deleted answer", reason: "WORKSPACE_DELETED" },
    ];
    for (const c of cases) {
      const workspace = await createWorkspace(t.client);
      const run = (await admit(t.client, { workspaceId: workspace.id, question: c.question })).run;
      await expect.poll(async () => (await materials(t.client, run.id)).status, { timeout: 20_000, interval: 10 }).not.toBe("QUEUED");
      if (c.reason === "WORKSPACE_ARCHIVED") await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
      else await t.client.request(DeleteWorkspaceDocument, { input: { workspaceId: workspace.id } });
      gate.release(c.gate);
      expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");
      const result = await materials(t.client, run.id);
      expect(result.acceptedPublicationVersions.edges.map((edge) => edge.node).map((v) => v.content)).toEqual([c.answer]);
      expect(result.linkRefusals.edges.map((edge) => edge.node)).toEqual([
        expect.objectContaining({ targetId: result.acceptedPublicationVersions.edges.map((edge) => edge.node)[0]!.publication.id, reason: c.reason }),
      ]);
    }
  });
});
