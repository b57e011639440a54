// What one MCP server's listing may keep, with a real stdio server (test/support/mcp-raw-server.ts):
// every worker and API instance its owner uses holds the listing, and lists it again whenever the
// server says its tools changed. A long description is cut and says so, to a person and to the
// model; a name too long to call is skipped; the tools kept stop at 4,194,304 characters in all;
// the server's ordinary tools are kept as listed.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { McpServersDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import { admit, expectType } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-raw-server.ts");

describe("an MCP server's listing, bounded", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  // A listing of some 5.6 MB over stdio: more than the default time on a busy machine.
  it("cuts long descriptions, skips a name too long and the tools past 4,194,304 characters, and keeps ordinary tools whole", {
    timeout: 180_000,
  }, async () => {
    const model = toolCallingModel("mcp");
    t = await startTestApp("pglite", {
      mcp: { stdioCommands: [`${process.execPath} --import tsx ${SERVER_SCRIPT} …`] },
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 5_000 },
    });
    const input = { name: "raw", transport: "STDIO" as const, command: process.execPath, args: ["--import", "tsx", SERVER_SCRIPT, "--big-tools", "70"] };
    expectType((await t.client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess");
    const status = (await t.client.request(McpServersDocument)).mcpServers.edges[0]!.node.status;
    expect(status.state).toBe("CONNECTED");

    // 70 tools of 20,000 description and 60,000 schema characters, over 8 pages: each keeps
    // 8,192 + 89 (the note) + 60,000 and its name, so 61 fit besides the four ordinary tools.
    const big = status.tools.filter((tool) => tool.name.startsWith("big_"));
    expect(big).toHaveLength(61);
    const why = "the server's description takes 20,000 characters: only its first 8,192 are kept";
    for (const tool of big) expect([tool.description!.length, tool.description!.endsWith(` [… cut: ${why}]`), tool.descriptionCut]).toEqual([8_281, true, why]);
    const kept = status.tools.reduce((sum, tool) => sum + tool.name.length + (tool.description?.length ?? 0), 0);
    expect(kept).toBeLessThan(4_194_304 - 61 * 60_000);

    expect(status.skippedTools[0]).toEqual({ position: 4, reason: "its name takes 1,000 characters, more than 512" });
    expect(status.skippedTools.slice(1).map((skipped) => skipped.position)).toEqual(Array.from({ length: 9 }, (_, i) => 66 + i));
    expect(status.skippedTools[1]!.reason).toMatch(
      /^it takes 68,\d{3} characters, and the tools kept before it 4,1\d\d,\d{3}: a listing keeps at most 4,194,304$/,
    );

    // The server's ordinary tools, as listed.
    const ordinary = status.tools.filter((tool) => !tool.name.startsWith("big_"));
    expect(ordinary.map((tool) => [tool.name, tool.description, tool.descriptionCut])).toEqual([
      ["odd", "A content block of a type the protocol does not have.", null],
      ["redos", "Structured content against a catastrophic pattern.", null],
      ["shaped", "Text only, though it declares an output schema.", null],
      ["structured", "Structured content only.", null],
    ]);

    // The model is offered the cut description, its note included.
    const done = await settled(t.client, (await admit(t.client, { question: callTools({ name: "mcp__raw__big_0" }) })).run.id);
    expect([done.status, done.answer]).toEqual(["SUCCEEDED", "big_0: answered"]);
    const offered = model.requests[0]!.tools.find((tool) => tool.name === "mcp__raw__big_0");
    expect(offered?.description).toBe(`[MCP server raw] Big tool 0. ${"d".repeat(8_192 - "Big tool 0. ".length)} [… cut: ${why}]`);
  });
});
