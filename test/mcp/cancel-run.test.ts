// The MCP server for workspaces stops runs: cancel_run with a mode, as the run's owner only.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { admit } from "../support/fixtures.js";
import { connectMcp } from "../support/mcp-process.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

describe("cancel_run", () => {
  let t: TestApp | undefined;
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await t?.close();
  });

  it("stops a run of the key's principal in the mode asked for, and not another principal's run", async () => {
    const publish: Tool = {
      schema: { name: "publish_post", description: "publishes", parameters: { type: "object" } },
      execute: async () => "published",
    };
    t = await startTestApp("pglite", {
      listen: true,
      authRequired: true,
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-mcp-stop-")),
        extraTools: [publish],
        approvals: { rules: { publish_post: "always" } },
      },
    });
    const aliceKey = await t.createPrincipal("alice");
    const alice = await connectMcp({ DOSSIER_URL: t.server!.url, DOSSIER_API_KEY: aliceKey });
    const bob = await connectMcp({ DOSSIER_URL: t.server!.url, DOSSIER_API_KEY: await t.createPrincipal("bob") });
    clients.push(alice.client, bob.client);
    const { run } = await admit(t.as(aliceKey), { question: callTools({ name: "publish_post", arguments: { title: "Hello" } }) });
    await waitUntil(async () => (JSON.parse(await alice.text("get_run", { runId: run.id })).status === "WAITING" ? true : undefined));

    const stranger = await bob.call("cancel_run", { runId: run.id, mode: "AFTER_TURN" });
    expect(stranger.isError).toBe(true);
    expect(stranger.content[0]!.text).toMatch(/is visible to this API key/);

    // A run waiting for a decision has no turn under way: AFTER_TURN stops it at once.
    const stopped = JSON.parse(await alice.text("cancel_run", { runId: run.id, mode: "AFTER_TURN" }));
    expect(stopped.run).toMatchObject({ status: "CANCELLED", answerComplete: false, stopRequest: { mode: "AFTER_TURN" } });
    expect((await settled(t.as(aliceKey), run.id)).status).toBe("CANCELLED");
    const invalid = await alice.call("cancel_run", { runId: run.id, mode: "LATER" });
    expect(invalid.isError).toBe(true);
  });
});
