// What a person reads of a held call's arguments through the API (ToolApproval.readableArguments)
// and the MCP server's get_run: the values the tool gets, not the escapes the model wrote them
// with, every hidden character (a bidi override written as an escape, marks stacked over the next
// word) shown as its escape and counted in a warning; the stored arguments stay as the model wrote them.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { admit, expectType } from "../support/fixtures.js";
import { connectMcp } from "../support/mcp-process.js";
import { callTools, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const HIDDEN_WARNING = (n: number) =>
  `The arguments hold ${n} hidden character${n === 1 ? "" : "s"} (invisible, bidi, control or format characters, odd blanks, stacked marks): each is shown as its escape, such as \\u202E.`;
const ESCAPED_WARNING = (n: number) => `The model wrote ${n} plain characters as \\u escapes (\\u0072 for r): shown decoded, as the tool gets them.`;
const BLANK_WARNING =
  "The arguments hold 1 long run of blanks (spaces, tabs, line breaks), which could push what follows out of view: each is shown as its count, such as ⚠[40 spaces].";
const SIGN_WARNING = "The arguments hold 1 ⚠ sign of their own: each is shown as its escape, \\u26A0, so every ⚠ shown is Dossier's mark.";
const MIXED_WARNING = "The arguments hold 1 word that mixes Latin, Greek and Cyrillic letters, which can look alike: each is shown after a ⚠.";
const NONE = { blankRuns: 0, warningSigns: 0, mixedScriptWords: 0 };

describe("a held call's arguments as a person reads them", () => {
  let t: TestApp | undefined;
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await t?.close();
  });

  it("are decoded, their hidden characters shown and counted, in GraphQL and in get_run", async () => {
    const shell: Tool = {
      schema: { name: "shell", description: "runs a command", parameters: { type: "object", properties: { command: { type: "string" } } } },
      execute: async () => "ran",
    };
    t = await startTestApp("pglite", {
      listen: true,
      authRequired: true,
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-mcp-readable-")),
        extraTools: [shell],
        approvals: { rules: { shell: "always" } },
      },
    });
    const key = await t.createPrincipal("alice");
    const client = t.as(key);
    // "rm -rf ~" written as escapes; "cat" whose "/tmp" six stacked marks cover; a right-to-left
    // override written as an escape, after a carriage return between the values; a Cyrillic і written as an escape.
    const stack = "\u0336".repeat(6);
    const raw = {
      escaped: String.raw`{"command":"\u0072\u006d -rf ~"}`,
      stacked: `{"command":"cat x${stack} /tmp"}`,
      bidi: `{"command":"ls",\r"note":"\\u202Etxt.exe"}`,
      host: String.raw`{"command":"curl https://g\u0456thub.com"}`,
      // A ⚠ of the model's own before a long run of spaces that would push "rm -rf ~" out of view; an unassigned and a private-use code point.
      forged: JSON.stringify({ command: `echo ⚠ safe${" ".repeat(40)}; rm -rf ~`, note: "x\u0378\uE000" }),
    };
    const { run } = await admit(client, { question: callTools(...Object.values(raw).map((text) => ({ name: "shell", arguments: text }))) });
    const held = await waitUntil(async () => {
      const current = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return current.status === "WAITING" && current.pendingApprovals.edges.length === 5 ? current : undefined;
    });
    const approvals = held.pendingApprovals.edges.map((edge) => edge.node);
    // Stored and given exactly as the model wrote them.
    expect(approvals.map((a) => a.arguments).sort()).toEqual(Object.values(raw).sort());
    const readable = (text: string) => approvals.find((a) => a.arguments === text)!.readableArguments;
    expect(readable(raw.escaped)).toEqual({
      text: '{"command":"rm -rf ~"}',
      hiddenCharacters: 0,
      escapedCharacters: 2,
      ...NONE,
      warnings: [ESCAPED_WARNING(2)],
    });
    const shownStack = "\\u0336".repeat(6);
    expect(readable(raw.stacked)).toEqual({
      text: `{"command":"cat x${shownStack} /tmp"}`,
      hiddenCharacters: 6,
      escapedCharacters: 0,
      ...NONE,
      warnings: [HIDDEN_WARNING(6)],
    });
    expect(readable(raw.bidi)).toEqual({
      text: '{"command":"ls","note":"\\u202Etxt.exe"}',
      hiddenCharacters: 1,
      escapedCharacters: 0,
      ...NONE,
      warnings: [HIDDEN_WARNING(1)],
    });
    expect(readable(raw.host)).toEqual({
      text: '{"command":"curl https://⚠g\u0456thub.com"}',
      hiddenCharacters: 0,
      escapedCharacters: 0,
      ...NONE,
      mixedScriptWords: 1,
      warnings: [MIXED_WARNING],
    });
    const shownForged = String.raw`{"command":"echo \u26A0 safe⚠[40 spaces]; rm -rf ~","note":"x\u0378\uE000"}`;
    expect(readable(raw.forged)).toEqual({
      text: shownForged,
      hiddenCharacters: 2,
      escapedCharacters: 0,
      blankRuns: 1,
      warningSigns: 1,
      mixedScriptWords: 0,
      warnings: [HIDDEN_WARNING(2), BLANK_WARNING, SIGN_WARNING],
    });

    const mcp = await connectMcp({ DOSSIER_URL: t.server!.url, DOSSIER_API_KEY: key });
    clients.push(mcp.client);
    const got = JSON.parse(await mcp.text("get_run", { runId: run.id }));
    expect(got.status).toBe("WAITING");
    const byId = new Map<string, { arguments: string; warnings?: string[]; mixedScripts?: string[] }>(
      got.pendingApprovals.map((call: { approvalId: string }) => [call.approvalId, call]),
    );
    const listed = (text: string) => {
      const { arguments: args, warnings, mixedScripts } = byId.get(approvals.find((a) => a.arguments === text)!.id)!;
      return { arguments: args, warnings, mixedScripts };
    };
    expect(listed(raw.escaped)).toEqual({ arguments: '{"command":"rm -rf ~"}', warnings: [ESCAPED_WARNING(2)] });
    expect(listed(raw.stacked)).toEqual({ arguments: `{"command":"cat x${shownStack} /tmp"}`, warnings: [HIDDEN_WARNING(6)] });
    expect(listed(raw.bidi)).toEqual({ arguments: '{"command":"ls","note":"\\u202Etxt.exe"}', warnings: [HIDDEN_WARNING(1)] });
    expect(listed(raw.forged)).toEqual({ arguments: shownForged, warnings: [HIDDEN_WARNING(2), BLANK_WARNING, SIGN_WARNING] });
    expect(listed(raw.host)).toEqual({
      arguments: '{"command":"curl https://⚠g\u0456thub.com"}',
      warnings: [MIXED_WARNING],
      mixedScripts: ['"g\u0456thub.com" mixes Latin and Cyrillic letters, which can look alike: \u0456 (U+0456) is not Latin'],
    });
  });
});
