// A tool call the bound on a reply's size (MODEL_MAX_REPLY_BYTES) left out of the reply had
// already streamed on runOutput under its id, with its arguments: that id is used in the run, and a
// later reply's call carrying it gets one of Dossier's own, as a repeated id does (call-ids.ts). A
// person deciding on the later call is shown its own arguments, never the cut call's joined to them.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createRunStore } from "../../sdk/run-store.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { countedDeployTool } from "../support/deploy-tool.js";
import { admit } from "../support/fixtures.js";
import { closedAfterEach } from "../support/per-test.js";
import { CUT_BOUND as BOUND, deployProduction, floodStaging } from "../support/cut-call-replies.js";
import { startTestApp } from "../support/test-app.js";

const closing = closedAfterEach();
async function startModel(): Promise<string> {
  let asked = 0;
  const server = createServer(async (req, res) => {
    for await (const _ of req);
    asked += 1;
    if (asked === 1) await floodStaging(res);
    else deployProduction(res);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  closing({ close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

describe("a reply's call left out by MODEL_MAX_REPLY_BYTES, its id repeated by the next reply's held call", () => {
  it("the held call gets an id of its own, and the person is shown its own arguments only", async () => {
    const baseURL = await startModel();
    const counted = countedDeployTool();
    const t = closing(
      await startTestApp("pglite", {
        listen: true,
        runtime: {
          model: new OpenAIModel({ baseURL, apiKey: "sk-local", model: "flood-model", contextWindow: 32_000, maxRetries: 0, maxReplyBytes: BOUND }),
          sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-cut-ids-")),
          extraTools: [counted.tool],
          approvals: { rules: { deploy: "always" } },
        },
      }),
    );
    const client = t.connect();
    closing({ close: () => client.close() });
    const { run } = await admit(client, { question: "Deploy it" });
    const store = createRunStore(client, run.id);
    closing({ close: async () => store.close() });
    const waiting = await new Promise<ReturnType<typeof store.getSnapshot>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out: ${JSON.stringify(store.getSnapshot()).slice(0, 2000)}`)), 60_000);
      const check = () => {
        const snapshot = store.getSnapshot();
        if (snapshot.status !== "WAITING" || snapshot.pendingApprovals.length === 0) return;
        if (!snapshot.toolCalls.some((call) => call.status === "WAITING_APPROVAL")) return;
        clearTimeout(timer);
        resolve(snapshot);
      };
      store.subscribe(check);
      check();
    });
    const [approval] = waiting.pendingApprovals;
    expect(approval).toMatchObject({ toolName: "deploy", arguments: '{"target":"production"}' });
    // The id the cut call streamed with names no other call of the run.
    expect(approval!.toolCallId).not.toBe("call_deploy");
    const held = waiting.toolCalls.filter((call) => call.status === "WAITING_APPROVAL");
    expect(held).toEqual([expect.objectContaining({ id: approval!.toolCallId, name: "deploy", arguments: '{"target":"production"}' })]);
    // The cut call is shown nowhere: it never runs, and waits for no one.
    expect(waiting.toolCalls.map((call) => call.arguments).filter((text) => text.includes("staging"))).toEqual([]);
    expect(counted.calls()).toBe(0);
  });
});
