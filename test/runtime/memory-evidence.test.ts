// R5, R3: an evidence id left in a compacted request resolves to the persisted original, byte for
// byte — through GraphQL (owner-only) and through the read_evidence tool (own conversation only).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EvidenceDocument } from "../../sdk/generated/graphql.js";
import type { ModelRequest } from "../../src/runtime/ports/model.js";
import { type Tool, ToolError } from "../../src/runtime/ports/tool.js";
import { createReadEvidenceTool } from "../../src/runtime/tools/read-evidence.js";
import { ScriptedModel, type ScriptStep } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { testRun, toolContext } from "../support/tool-context.js";

const ORIGINAL = `{"rows":[${Array.from({ length: 60 }, (_, i) => `"é漢字🚀 row ${i}\\r\\n\\t  "`).join(",")}]}\r\n  trailing\ttext  `;
const ARGS = JSON.stringify({ query: "Zahlungsstatus für ORD-2024-0117 — «prüfen» 🚀 ".repeat(40) });

const fetchDoc: Tool = {
  schema: { name: "fetch_doc", description: "fetches a document", parameters: { type: "object" } },
  execute: async () => ORIGINAL,
};
const note: Tool = {
  schema: { name: "write_note", description: "stores a note", parameters: { type: "object" } },
  execute: async () => "stored",
};

const evidenceIn = (request: ModelRequest) =>
  [
    ...request.messages
      .map((m) => JSON.stringify(m))
      .join("\n")
      .matchAll(/evidence (ev_[A-Za-z0-9]+(?:_a\d+)?)/g),
  ].map((m) => m[1]!);

describe.each(backends)("evidence on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("resolves result and argument evidence ids to byte-exact originals, for the owner and the run only", async () => {
    const steps = (request: ModelRequest, i: number): ScriptStep => {
      if (i === 0) return { toolCalls: [{ name: "fetch_doc", arguments: ARGS }] };
      if (i === 1) return { toolCalls: [{ name: "write_note", arguments: { text: "checked" } }] };
      if (i === 2) return { toolCalls: [{ name: "read_evidence", arguments: { id: evidenceIn(request).find((id) => !id.includes("_a"))! } }] };
      return { content: "Done." };
    };
    const model = new ScriptedModel({ name: "evidence", steps });
    t = await startTestApp(backend, {
      runtime: {
        model,
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")),
        extraTools: [fetchDoc, note],
        compactionPolicies: { fetch_doc: "always" },
      },
    });
    const { run } = await admit(t.client, { question: "Check the payment status" });
    const prisma = t.app.db.prisma;
    const runId = Buffer.from(run.id, "base64").toString("utf8").split(":")[1]!;
    await expect.poll(async () => (await prisma.run.findUniqueOrThrow({ where: { id: runId } })).status, { timeout: 15_000 }).toBe("SUCCEEDED");

    // The third request no longer shows the originals, only pointers to them.
    const third = model.requests[2]!;
    const ids = evidenceIn(third);
    expect(ids).toHaveLength(2);
    expect(JSON.stringify(third.messages)).not.toContain("row 59");
    const resultId = ids.find((id) => !id.includes("_a"))!;
    const argsId = ids.find((id) => id.endsWith("_a0"))!;

    const result = (await t.client.request(EvidenceDocument, { id: resultId })).evidence!;
    expect(result).toMatchObject({ id: resultId, kind: "TOOL_RESULT", toolName: "fetch_doc", content: ORIGINAL, size: Buffer.byteLength(ORIGINAL) });
    expect(Buffer.from(result.content, "utf8").equals(Buffer.from(ORIGINAL, "utf8"))).toBe(true);
    const args = (await t.client.request(EvidenceDocument, { id: argsId })).evidence!;
    expect(args).toMatchObject({ kind: "TOOL_CALL_ARGUMENTS", toolName: "fetch_doc", content: ARGS, toolCallId: "call_0_0" });
    expect(args.message.role).toBe("ASSISTANT");

    // Nobody else can read it; nonsense ids are simply not found.
    const other = t.as(await t.createPrincipal("Other"));
    expect((await other.request(EvidenceDocument, { id: resultId })).evidence).toBeNull();
    expect((await t.client.request(EvidenceDocument, { id: "ev_nothing" })).evidence).toBeNull();
    expect((await t.client.request(EvidenceDocument, { id: "not-an-id" })).evidence).toBeNull();

    // The model read it back through read_evidence, within its own conversation.
    const readBack = await prisma.message.findFirstOrThrow({ where: { runId, role: "TOOL", toolName: "read_evidence" } });
    expect(readBack.content).toBe(
      `[evidence ${resultId}: result of fetch_doc, characters 0–${Array.from(ORIGINAL).length} of ${Array.from(ORIGINAL).length}]\n${ORIGINAL}`,
    );
    const tool = createReadEvidenceTool(t.app.services.conversations);
    const foreign = toolContext({ run: testRun({ conversationId: "another-conversation" }) });
    await expect(tool.execute({ id: resultId }, foreign)).rejects.toBeInstanceOf(ToolError);
    const own = toolContext({ run: testRun({ conversationId: readBack.conversationId }) });
    const page = await tool.execute({ id: argsId, offset: 10, maxChars: 20 }, own);
    expect(page).toBe(
      `[evidence ${argsId}: arguments of fetch_doc, characters 10–30 of ${Array.from(ARGS).length}; call again with offset 30 for the rest]\n${Array.from(ARGS).slice(10, 30).join("")}`,
    );
  }, 60_000);
});
