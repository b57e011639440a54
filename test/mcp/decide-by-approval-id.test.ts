// Two calls a run waits on whose ids the model made look alike ("call_1" and "call_1" followed
// by a zero-width space): get_run shows the ids apart, with each request's approvalId, and
// decide_tool_call by approvalId decides exactly the request named, leaving the other waiting.
// A model's id written as another's is shown ("call_1\u200B" typed out beside a real zero-width
// space) shows apart too; and while several calls wait a toolCallId is refused rather than guessed
// (ids of one script can look like another's: "саӏӏ_1" in Cyrillic beside "call_1").
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, describe, expect, it } from "vitest";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { admit } from "../support/fixtures.js";
import { connectMcp } from "../support/mcp-process.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

type Shown = { approvalId: string; toolCallId: string; arguments: string };

describe("decide_tool_call by approvalId", () => {
  const apps: TestApp[] = [];
  const clients: Client[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    for (const app of apps) await app.close();
  });

  /** An app whose publish_post tool is always held, Alice's key, and her MCP server; `published`: what the tool ran with. */
  const publishing = async () => {
    const published: unknown[] = [];
    const publish: Tool = {
      schema: { name: "publish_post", description: "publishes", parameters: { type: "object" } },
      execute: async (args) => {
        published.push(args);
        return "published";
      },
    };
    const app = await startTestApp("pglite", {
      listen: true,
      authRequired: true,
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-mcp-approval-ids-")),
        extraTools: [publish],
        approvals: { rules: { publish_post: "always" } },
      },
    });
    apps.push(app);
    const key = await app.createPrincipal("alice");
    const alice = await connectMcp({ DOSSIER_URL: app.server!.url, DOSSIER_API_KEY: key });
    clients.push(alice.client);
    return { app, published, key, alice };
  };

  it("tells look-alike call ids apart and decides the request named", async () => {
    const { app: t, published, key, alice } = await publishing();
    const question = callTools(
      { name: "publish_post", arguments: { title: "draft" }, id: "call_1" },
      { name: "publish_post", arguments: { title: "final" }, id: "call_1\u200b" },
    );
    const { run } = await admit(t.as(key), { question });
    const pending = async (): Promise<Shown[]> => JSON.parse(await alice.text("get_run", { runId: run.id })).pendingApprovals ?? [];
    const shown = await waitUntil(async () => {
      const calls = await pending();
      return calls.length === 2 ? calls : undefined;
    });
    expect(shown.map((call) => [call.toolCallId, call.arguments])).toEqual([
      ["call_1", '{"title":"draft"}'],
      ["call_1\\u200B", '{"title":"final"}'],
    ]);
    expect(shown.every((call) => typeof call.approvalId === "string" && call.approvalId.length > 0)).toBe(true);

    // Named by approvalId alone, "call_1" is decided, never the call that only looks like it.
    const draft = shown[0]!;
    expect(
      JSON.parse(await alice.text("decide_tool_call", { runId: run.id, approvalId: draft.approvalId, decision: "REJECT", reason: "not the draft" })),
    ).toMatchObject({
      decision: "REJECT",
    });
    expect((await pending()).map((call) => call.toolCallId)).toEqual(["call_1\\u200B"]);

    // The other, named by its approvalId with a toolCallId that does not say which: decided as named.
    const final = shown[1]!;
    const decided = JSON.parse(
      await alice.text("decide_tool_call", { runId: run.id, approvalId: final.approvalId, toolCallId: "call_1", decision: "APPROVE" }),
    );
    expect(decided.decision).toBe("APPROVE");
    await settled(t.as(key), run.id, 60_000);
    expect(published).toEqual([{ title: "final" }]);
  });

  it("shows an id written as another's escape apart from it, and takes a toolCallId only while one call waits", async () => {
    const { app, published, key, alice } = await publishing();
    // The first id holds a real zero-width space; the second, the six characters of its escape.
    const question = callTools(
      { name: "publish_post", arguments: { title: "harmless draft" }, id: "call_1\u200b" },
      { name: "publish_post", arguments: { title: "HOSTILE" }, id: "call_1\\u200B" },
    );
    const { run } = await admit(app.as(key), { question });
    const pending = async (): Promise<Shown[]> => JSON.parse(await alice.text("get_run", { runId: run.id })).pendingApprovals ?? [];
    const shown = await waitUntil(async () => {
      const calls = await pending();
      return calls.length === 2 ? calls : undefined;
    });
    expect(shown.map((call) => [call.toolCallId, call.arguments])).toEqual([
      ["call_1\\u200B", '{"title":"harmless draft"}'],
      ["call_1\\u005Cu200B", '{"title":"HOSTILE"}'],
    ]);

    // The harmless call's id as shown is the hostile call's id as written: with two calls waiting a
    // toolCallId is refused, whichever it names, and nothing is decided.
    for (const toolCallId of ["call_1\\u200B", "call_1\\u005Cu200B"]) {
      const refused = await alice.call("decide_tool_call", { runId: run.id, toolCallId, decision: "APPROVE" });
      expect(refused.isError).toBe(true);
      expect(refused.content[0]!.text).toBe("2 calls wait: name the one you decide by its approvalId from get_run (call ids can look alike).");
    }
    expect((await pending()).map((call) => call.arguments)).toEqual(['{"title":"harmless draft"}', '{"title":"HOSTILE"}']);

    // The hostile one rejected by its approvalId, the harmless one is the one call waiting: its id as shown decides it.
    await alice.text("decide_tool_call", { runId: run.id, approvalId: shown[1]!.approvalId, decision: "REJECT", reason: "no" });
    expect((await pending()).map((call) => call.arguments)).toEqual(['{"title":"harmless draft"}']);
    const approved = JSON.parse(await alice.text("decide_tool_call", { runId: run.id, toolCallId: "call_1\\u200B", decision: "APPROVE" }));
    expect(approved.decision).toBe("APPROVE");
    await settled(app.as(key), run.id, 60_000);
    expect(published).toEqual([{ title: "harmless draft" }]);
  });
});
