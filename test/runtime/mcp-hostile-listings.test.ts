// What an MCP server lists never costs its owner's runs more than the tools it spoils: an input
// schema nested past any sense, a list too long for the context window, names and text holding
// NUL or unpaired surrogates. A real stdio server written without the SDK
// (test/support/mcp-raw-server.ts) lists exactly what it writes.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DecideToolCallDocument, McpServersDocument, RunApprovalsDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import type { ModelPort } from "../../src/runtime/ports/model.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { admit, expectType } from "../support/fixtures.js";
import { type ChatBody, type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { projectRoot } from "../support/processes.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-raw-server.ts");
/** A NUL, or a UTF-16 surrogate without its pair. */
const unsendable = (text: string) => text.includes("\u0000") || /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
/** Every text of a parsed JSON value, object keys included. */
const textsOf = (value: unknown): string[] =>
  typeof value === "string"
    ? [value]
    : typeof value === "object" && value !== null
      ? Object.entries(value).flatMap(([key, item]) => [...(Array.isArray(value) ? [] : [key]), ...textsOf(item)])
      : [];

describe("hostile MCP tool listings", () => {
  let t: TestApp | undefined;
  let stub: OpenAIStreamStub | undefined;
  afterEach(async () => {
    await t?.close();
    await stub?.close();
    t = stub = undefined;
  });

  async function startWith(model: ModelPort, extra: string[], requireApproval = false) {
    t = await startTestApp("pglite", {
      mcp: { stdioCommands: [`${process.execPath} --import tsx ${SERVER_SCRIPT} …`] },
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 5_000 },
    });
    const input = { name: "raw", transport: "STDIO" as const, command: process.execPath, args: ["--import", "tsx", SERVER_SCRIPT, ...extra], requireApproval };
    expectType((await t.client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess");
    return t;
  }
  const status = async () => (await t!.client.request(McpServersDocument)).mcpServers.edges[0]!.node.status;

  it("offers a tool whose input schema nests 20,000 levels with an open schema, says why, and the owner's runs go on", async () => {
    const model = toolCallingModel("mcp");
    await startWith(model, ["--deep-schema"]);
    const deep = (await status()).tools.find((tool) => tool.name === "deepschema");
    expect(deep?.inputSchemaReplaced).toBe("the server's input schema: it nests deeper than 64 levels");

    const done = await settled(t!.client, (await admit(t!.client, { question: callTools({ name: "mcp__raw__shaped" }) })).run.id);
    expect([done.status, done.answer]).toEqual(["SUCCEEDED", "shaped: the text the tool returned"]);
    expect(new Map(model.requests[0]!.tools.map((tool) => [tool.name, tool.parameters])).get("mcp__raw__deepschema")).toEqual({ type: "object" });
  });

  it("offers a run as many of 300 long tools as fit half a 32k window, in a stable order, and says which it left out", async () => {
    const model = toolCallingModel("mcp", 32_000);
    await startWith(model, ["--many-tools", "300"]);
    expect((await status()).tools).toHaveLength(304);

    const { run } = await admit(t!.client, { question: callTools({ name: "mcp__raw__bulk_0" }) });
    const done = await settled(t!.client, run.id);
    expect([done.status, done.answer]).toEqual(["SUCCEEDED", "bulk_0: answered"]);
    // The order runs are offered a server's tools in: by name.
    const listed = ["shaped", "redos", "odd", "structured", ...Array.from({ length: 300 }, (_, i) => `bulk_${i}`)].sort();
    const offered = model.requests[0]!.tools.flatMap((tool) => (tool.name.startsWith("mcp__raw__") ? [tool.name.slice("mcp__raw__".length)] : []));
    // (32,000 − 8,000 − 3,000) / 2 = 10,500 tokens: about 40 tools of some 260 tokens each.
    expect(offered.length).toBeGreaterThan(25);
    expect(offered.length).toBeLessThan(60);
    expect(offered).toEqual(listed.slice(0, offered.length));

    // The run's trace (the database holds this run only) says which tools it was not offered, and why.
    const events = await t!.app.db.prisma.spanEvent.findMany({ where: { kind: "CONTEXT" } });
    const leftOut = events
      .map((event) => JSON.parse(event.payload) as { mcpToolShare: number; mcpToolsLeftOut?: string[]; reason: string })
      .find((p) => p.mcpToolsLeftOut);
    expect(leftOut?.mcpToolShare).toBe(10_500);
    expect(leftOut?.mcpToolsLeftOut).toEqual(listed.slice(offered.length).map((name) => `raw/${name}`));
    expect(leftOut?.reason).toMatch(/^MCP tool definitions may take 10500 tokens of a request/);
  });

  it.each([
    ["nul\u0000tool", "mcp__raw__nul_tool", "nul\u2400tool"],
    ["lone\ud800tool", "mcp__raw__lone_tool", "lone\ufffdtool"],
  ])("waits for approval of %j, shows the name the server gave, and runs it once approved", async (name, exposed, shown) => {
    await startWith(toolCallingModel("mcp"), ["--odd-names"], true);
    const { run } = await admit(t!.client, { question: callTools({ name: exposed }) });
    const waiting = await waitUntil(async () => {
      const current = expectType((await t!.client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return ["QUEUED", "RUNNING"].includes(current.status) ? undefined : current;
    });
    expect(waiting.status).toBe("WAITING");
    const pending = waiting.pendingApprovals.edges.map((edge) => edge.node);
    expect(pending.map((approval) => approval.mcpTool)).toEqual([`raw/${name}`]);

    const input = { runId: run.id, toolCallId: pending[0]!.toolCallId, decision: "APPROVE" as const };
    expectType((await t!.client.request(DecideToolCallDocument, { input })).decideToolCall, "DecideToolCallSuccess");
    const done = await settled(t!.client, run.id);
    // The model saw the tool's answer (and the name in it) as models are shown text.
    expect([done.status, done.answer]).toEqual(["SUCCEEDED", `${shown}: answered`]);
  });

  it("shows the model tool descriptions and schemas without NUL or unpaired surrogates", async () => {
    const bodies: unknown[] = [];
    stub = await startOpenAIStreamStub((body: ChatBody) => {
      bodies.push((body as ChatBody & { tools?: unknown }).tools);
      return { text: ["done"] };
    });
    await startWith(new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 128_000, maxRetries: 0 }), [
      "--odd-names",
    ]);
    await waitUntil(async () => ((await status()).tools.length === 6 ? true : undefined));
    const done = await settled(t!.client, (await admit(t!.client, { question: "Which tools are there?" })).run.id);
    expect([done.status, done.answer]).toEqual(["SUCCEEDED", "done"]);
    const tools = bodies[0] as { function: { name: string; description: string; parameters: unknown } }[];
    const odd = tools.filter((tool) => tool.function.name === "mcp__raw__nul_tool" || tool.function.name === "mcp__raw__lone_tool");
    expect(odd).toHaveLength(2);
    for (const tool of odd) expect(textsOf(tool).filter(unsendable), tool.function.name).toEqual([]);
    expect(odd.find((tool) => tool.function.name === "mcp__raw__nul_tool")!.function.description).toBe(
      "[MCP server raw] The tool nul\u2400tool: odd \u2400 and \uFFFD text.",
    );
  });
});
