// Listing an MCP server's tools: one odd tool never costs the server its others, and however often
// the server says its tools changed, they are listed again at most once a second, one listing at a
// time, ending on the server's latest list. A real stdio server written without the SDK
// (test/support/mcp-raw-server.ts) lists exactly what it writes.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { McpServersDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import type { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { admit, expectType } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-raw-server.ts");

describe("MCP tool listing", () => {
  let t: TestApp | undefined;
  let model: ScriptedModel;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function startWith(...extra: string[]) {
    model = toolCallingModel("mcp");
    t = await startTestApp("pglite", {
      mcp: { stdioCommands: [`${process.execPath} --import tsx ${SERVER_SCRIPT} …`] },
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 5_000 },
    });
    const input = { name: "raw", transport: "STDIO" as const, command: process.execPath, args: ["--import", "tsx", SERVER_SCRIPT, ...extra] };
    expectType((await t.client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess");
  }

  const status = async () => (await t!.client.request(McpServersDocument)).mcpServers.edges[0]!.node.status;
  const toolNames = async () => (await status()).tools.map((tool) => tool.name);

  it("offers every tool with a name, an odd input schema replaced by an open one, and says which tool was skipped and why", async () => {
    await startWith("--odd-tools");
    const listed = await status();
    expect(listed.state).toBe("CONNECTED");
    expect(listed.skippedTools).toEqual([{ position: 5, reason: "it has no name" }]);
    expect(listed.tools.map((tool) => [tool.name, tool.description, tool.inputSchemaReplaced])).toEqual(
      [
        ["loose", "An input schema without a type.", `the server's input schema: its type is missing, not "object"`],
        ["odd", "A content block of a type the protocol does not have.", null],
        ["shaped", "Text only, though it declares an output schema.", null],
        ["stringy", "An input schema of type string.", `the server's input schema: its type is "string", not "object"`],
        ["structured", "Structured content only.", null],
        ["redos", "Structured content against a catastrophic pattern.", null],
        ["unkempt", null, null],
      ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
    );

    const calls = ["shaped", "loose", "stringy", "unkempt"].map((name) => ({ name: `mcp__raw__${name}`, arguments: name === "loose" ? { q: "x" } : {} }));
    const done = await settled(t!.client, (await admit(t!.client, { question: callTools(...calls) })).run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer!.split("\n---\n")).toEqual([
      "shaped: the text the tool returned",
      'loose: answered {"q":"x"}',
      "stringy: answered",
      "unkempt: answered",
    ]);
    // The model is offered an open object schema for the odd ones, the server's own for the others.
    const offered = new Map(model.requests[0]!.tools.map((tool) => [tool.name, tool.parameters]));
    expect(offered.get("mcp__raw__loose")).toEqual({ type: "object" });
    expect(offered.get("mcp__raw__stringy")).toEqual({ type: "object" });
    expect(offered.get("mcp__raw__unkempt")).toEqual({ type: "object", properties: { n: { type: "number" } } });
  });

  it("lists a server's tools again once per burst of tools/list_changed, not once per notification, and ends on its latest list", async () => {
    await startWith("--churn");
    expect(await toolNames()).toEqual(["churn", "listing_1", "version_0"]);

    const churned = await settled(t!.client, (await admit(t!.client, { question: callTools({ name: "mcp__raw__churn", arguments: { count: 200 } }) })).run.id);
    expect(churned.answer).toBe("churn: the list changed 200 times");
    // The first notification is answered at once; the 199 after it, arriving meanwhile, by one more
    // listing a second later: the third the server answered, which saw every change.
    await expect.poll(toolNames, { timeout: 15_000, interval: 100 }).toEqual(["churn", "listing_3", "version_200"]);
    await sleep(2_500);
    expect(await toolNames()).toEqual(["churn", "listing_3", "version_200"]);

    const next = await settled(t!.client, (await admit(t!.client, { question: callTools({ name: "mcp__raw__version_200" }) })).run.id);
    expect(next.answer).toBe("version_200: answered");
  });
});
