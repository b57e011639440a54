// W8 through the SDK: the ledger names exactly what a run read and what its model requests
// carried — a range of characters and the hash of those characters — so a part is never
// recorded as the whole version, and a read the model was not shown is never CONSUMED.
import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { LinkToWorkspaceDocument, PublicationVersionUsesDocument, RunMaterialsDocument } from "../../sdk/generated/graphql.js";
import type { ChatMessage, ModelPort, ModelRequest } from "../../src/runtime/ports/model.js";
import { type ScriptStep, ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";
import { questionOf } from "../support/requests.js";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
const text = (m: ChatMessage) => (typeof m.content === "string" ? m.content : "");

/** The publicationId the workspace context lists for a title. */
function listedId(request: ModelRequest, title: string): string {
  const context = request.messages.map(text).find((c) => c.startsWith("<workspace-context>")) ?? "";
  const id = new RegExp(`^- "${title}" publicationId=(\\S+?)[:,]`, "m").exec(context)?.[1];
  if (!id) throw new Error(`"${title}" is not listed in:\n${context}`);
  return id;
}

/** A model that plays `script` turn by turn (turn = model steps already in the request). */
const scripted = (script: (request: ModelRequest, turn: number) => ScriptStep) =>
  new ScriptedModel({ name: "ranges", steps: (request) => script(request, request.messages.filter((m) => m.role === "assistant").length) });

/** A model that numbers its tool calls from call_0 at every step, as some models do. */
function reusingCallIds(inner: ScriptedModel): ModelPort {
  const renumber = <C extends { id: string }>(call: C, index: number): C => ({ ...call, id: `call_${index}` });
  return {
    label: inner.label,
    model: inner.model,
    scripted: inner.scripted,
    contextWindow: inner.contextWindow,
    async complete(request, onEvent) {
      let index = 0;
      const response = await inner.complete(request, (event) =>
        onEvent?.(event.type === "tool_call" ? { ...event, call: renumber(event.call, index++) } : event),
      );
      return { ...response, toolCalls: response.toolCalls.map(renumber) };
    },
  };
}

const read = (publicationId: string, extra: { offset?: number; maxChars?: number } = {}) => ({
  name: "read_material",
  arguments: { publicationId, version: 1, ...extra },
});

// ~68,000 characters, each position distinguishable, so a wrong range has a different hash.
const LONG = Array.from({ length: 4_000 }, (_, i) => `Line ${i}: holdings and fees.`).join("\n");
const SHORT = "Fund E: one page, read whole.";

describe.each(backends)("the ledger's ranges on %s", (backend) => {
  const opened: TestApp[] = [];
  afterEach(async () => {
    for (const app of opened.splice(0)) await app.close();
  });

  async function start(model: ModelPort, spill?: { policies: Record<string, { enabled?: boolean; thresholdChars?: number; previewChars?: number }> }) {
    const app = await startTestApp(backend, {
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 2_000, spill },
    });
    opened.push(app);
    return app;
  }

  /** A workspace linked to the long and the short report, and a settled run of `question` in it. */
  async function runIn(t: TestApp, question: string) {
    const workspace = await createWorkspace(t.client);
    const long = await publish(t.client, { title: "Long report", content: LONG });
    const short = await publish(t.client, { title: "Short report", content: SHORT });
    for (const report of [long, short]) {
      await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: report.version.publication.id } });
    }
    const { uses, run } = await settle(t, { workspaceId: workspace.id, question });
    return { workspace, long, short, uses, run };
  }

  async function settle(t: TestApp, input: Parameters<typeof admit>[1]) {
    const run = (await admit(t.client, input)).run;
    const settled = await waitUntil(async () => {
      const current = (await t.client.request(RunMaterialsDocument, { id: run.id })).run!;
      return ["QUEUED", "RUNNING"].includes(current.status) ? undefined : current;
    });
    expect(settled.status).toBe("SUCCEEDED");
    return { run, uses: settled.materialUses.edges.map((edge) => edge.node) };
  }

  const consumedBy = async (client: DossierClient, versionId: string) =>
    expectType((await client.request(PublicationVersionUsesDocument, { id: versionId })).node!, "PublicationVersion").consumedBy.edges.map((edge) => edge.node);

  it("a partial read records the characters read and their hash, a read at an offset its own range, and each carried part is CONSUMED as a part", async () => {
    const model = scripted((request, turn) => {
      const longId = listedId(request, "Long report");
      if (turn === 0) return { toolCalls: [read(longId), read(listedId(request, "Short report"))] };
      if (turn === 1) return { toolCalls: [read(longId, { offset: 30_000, maxChars: 5_000 })] };
      return { content: "Read two parts of the long report and all of the short one." };
    });
    const t = await start(model);
    expect(LONG.length).toBeGreaterThan(40_000);
    const { long, short, uses } = await runIn(t, "Read parts of the long report");

    const ofLong = (stage: string) =>
      uses
        .filter((u) => u.publicationId === long.version.publication.id && u.stage === stage)
        .map((u) => ({ range: u.range, contentHash: u.contentHash, coverage: u.coverage }));
    const parts = [
      { range: { start: 0, end: 16_000 }, contentHash: sha256(LONG.slice(0, 16_000)), coverage: "PART" },
      { range: { start: 30_000, end: 35_000 }, contentHash: sha256(LONG.slice(30_000, 35_000)), coverage: "PART" },
    ];
    // Neither part claims the whole version's hash.
    expect(parts.map((p) => p.contentHash)).not.toContain(sha256(LONG));
    expect(ofLong("READ")).toEqual(parts);
    expect(ofLong("CONSUMED")).toEqual(parts);
    // The model was shown exactly those characters.
    const shown = model.requests
      .at(-1)!
      .messages.filter((m) => m.role === "tool")
      .map(text);
    expect(shown.some((c) => c.includes(`\n${LONG.slice(0, 16_000)}\n</material>`))).toBe(true);
    expect(shown.some((c) => c.includes(`\n${LONG.slice(30_000, 35_000)}\n</material>`))).toBe(true);

    // Seen from the version: consumed in part, one entry per part, each from a model request.
    const byLong = await consumedBy(t.client, long.version.id);
    expect(byLong.map((u) => [u.coverage, u.range, u.requestSpan?.kind])).toEqual([
      ["PART", { start: 0, end: 16_000 }, "MODEL_CALL"],
      ["PART", { start: 30_000, end: 35_000 }, "MODEL_CALL"],
    ]);
    // A version read whole says so, with the version's own hash.
    const byShort = await consumedBy(t.client, short.version.id);
    expect(byShort.map((u) => [u.coverage, u.range, u.contentHash])).toEqual([["WHOLE", { start: 0, end: SHORT.length }, sha256(SHORT)]]);
  });

  it("a read the model is shown only as a preview (its result not carried verbatim) is READ and never CONSUMED", async () => {
    const model = scripted((request, turn) => {
      if (turn === 0) return { toolCalls: [read(listedId(request, "Long report"))] };
      if (turn === 1) return { toolCalls: [read(listedId(request, "Short report"))] };
      return { content: "Only the short report was in view." };
    });
    // An operator's policy that spills read_material results: the request carries a preview of
    // the long part and a pointer, not the part itself.
    const t = await start(model, { policies: { read_material: { enabled: true, thresholdChars: 1_000, previewChars: 200 } } });
    const { long, short, uses } = await runIn(t, "Read the long report behind a preview");

    const stages = (publicationId: string) => uses.filter((u) => u.publicationId === publicationId).map((u) => u.stage);
    expect(stages(long.version.publication.id)).toEqual(["DISCOVERED", "SELECTED", "READ"]);
    expect(uses.find((u) => u.stage === "READ" && u.publicationId === long.version.publication.id)!.range).toEqual({ start: 0, end: 16_000 });
    // Two more requests followed the read, and neither carried the part.
    expect(model.requests).toHaveLength(3);
    for (const request of model.requests.slice(1)) expect(request.messages.map(text).join("\n")).not.toContain(LONG.slice(1_000, 1_200));
    expect(await consumedBy(t.client, long.version.id)).toEqual([]);
    // The short result was under the threshold, carried whole, and consumed.
    expect(stages(short.version.publication.id)).toEqual(["DISCOVERED", "SELECTED", "READ", "CONSUMED"]);
  });

  it("a read past the end returns nothing and records no READ, so nothing is consumed", async () => {
    const model = scripted((request, turn) =>
      turn === 0 ? { toolCalls: [read(listedId(request, "Short report"), { offset: 5_000 })] } : { content: "Nothing to read there." },
    );
    const t = await start(model);
    const { short, uses } = await runIn(t, "Read past the end");
    const told = model.requests
      .at(-1)!
      .messages.filter((m) => m.role === "tool")
      .map(text);
    expect(told.join("\n")).toContain(`offset 5000 is past the end: version 1 has ${SHORT.length} characters`);
    expect(uses.filter((u) => u.publicationId === short.version.publication.id).map((u) => u.stage)).toEqual(["DISCOVERED", "SELECTED"]);
    expect(await consumedBy(t.client, short.version.id)).toEqual([]);
  });

  it("a read is consumed only through its own result: another run's carried result with the same call id does not count", async () => {
    // Each run reads one report at its first step; the model calls both reads call_0.
    const inner = scripted((request) => {
      const messages = request.messages;
      // The question ends the last user message (after the run's workspace context); after it, the run's own steps.
      const question = questionOf(messages.findLast((m) => m.role === "user")!.content);
      if (messages.findLastIndex((m) => m.role === "user") < messages.length - 1) return { content: "Done." };
      return { toolCalls: [read(listedId(request, question === "Read the short report" ? "Short report" : "Long report"))] };
    });
    const t = await start(reusingCallIds(inner), { policies: { read_material: { enabled: true, thresholdChars: 1_000, previewChars: 200 } } });
    const first = await runIn(t, "Read the short report");
    expect(first.uses.filter((u) => u.stage === "CONSUMED").map((u) => u.publicationId)).toEqual([first.short.version.publication.id]);

    // The second run continues the conversation: the first run's call_0 result is carried again,
    // while its own call_0 result — the long part — is shown only as a preview.
    const second = await settle(t, { workspaceId: first.workspace.id, conversationId: first.run.conversation.id, question: "Read the long report" });
    const readLong = second.uses.find((u) => u.stage === "READ" && u.publicationId === first.long.version.publication.id);
    expect(readLong?.range).toEqual({ start: 0, end: 16_000 });
    const lastRequest = inner.requests.at(-1)!.messages.map(text).join("\n");
    expect(lastRequest).toContain(SHORT);
    expect(lastRequest).not.toContain(LONG.slice(1_000, 1_200));
    expect(second.uses.filter((u) => u.stage === "CONSUMED")).toEqual([]);
  });
});
