// A tool call the bound on a reply's size (MODEL_MAX_REPLY_BYTES) left out of its reply streamed
// on runOutput under its id: that id stays the run's after the instance executing it stopped. The
// attempt that resumes the run on another instance reads it back with the run, and a later reply's
// call carrying it gets one of Dossier's own: the person deciding on that call sees it under an id
// no other call of the run streamed with, and only its own arguments.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createRunStore } from "../../sdk/run-store.js";
import { openDatabase } from "../../src/db/open-database.js";
import { createEventBus } from "../../src/events/topics.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { OWN_CALL_ID_PREFIX } from "../../src/runtime/loop/call-ids.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { countedDeployTool } from "../support/deploy-tool.js";
import { admit } from "../support/fixtures.js";
import { CUT_BOUND as BOUND, deployProduction, floodStaging } from "../support/cut-call-replies.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";

/** Request 1 is cut by the bound; request 2 is never answered (its instance stops); every later one deploys production. */
async function startModel(closing: (() => Promise<void>)[]): Promise<{ baseURL: string; asked: () => number }> {
  let asked = 0;
  const server = createServer(async (req, res) => {
    for await (const _ of req);
    asked += 1;
    if (asked === 1) await floodStaging(res);
    else if (asked === 2) res.writeHead(200, { "content-type": "text/event-stream" }).flushHeaders();
    else deployProduction(res);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  closing.push(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  return { baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, asked: () => asked };
}

describe.runIf(backends.includes("postgres"))("a reply's call left out by MODEL_MAX_REPLY_BYTES, then the run resumed on another instance", () => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  it("the resumed attempt's held call reusing the left-out id gets an id of its own; the person sees its own arguments only", async () => {
    const { baseURL, asked } = await startModel(closing);
    const database = await createMigratedPostgresDatabase();
    closing.push(() => database.drop());
    const open = async () => {
      const db = await openDatabase({ kind: "postgres", url: database.url });
      return { db, dispose: () => db.close() };
    };
    // One deployment: one database, one event bus (as Redis would be) between its instances.
    const events = createEventBus();
    const counted = countedDeployTool();
    const runtime = () => ({
      model: new OpenAIModel({ baseURL, apiKey: "sk-local", model: "flood-model", contextWindow: 32_000, maxRetries: 0, maxReplyBytes: BOUND }),
      sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-cut-ids-resumed-")),
      extraTools: [counted.tool],
      approvals: { rules: { deploy: "always" as const } },
    });
    const started = async (app: Promise<TestApp>) => {
      const t = await app;
      closing.push(() => t.close());
      return t;
    };
    // The instance a person watches the run through executes none of it.
    const api = await started(startTestApp("postgres", { database: open, events, listen: true }));
    const first = await startTestApp("postgres", { database: open, events, runtime: runtime() });
    let firstStopped: Promise<void> | undefined;
    const stopFirst = () => (firstStopped ??= first.close());
    closing.push(stopFirst);
    const client = api.connect();
    const { run } = await admit(client, { question: "Deploy it" });
    const store = createRunStore(client, run.id);
    closing.push(async () => store.close());

    // The cut reply is logged (its task_list call answered) and the next request is out: the instance stops.
    await waitFor(() => asked() === 2, 30_000);
    await stopFirst();
    await started(startTestApp("postgres", { database: open, events, runtime: runtime() }));

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
    expect(asked()).toBe(3);
    const [approval] = waiting.pendingApprovals;
    expect(approval).toMatchObject({ toolName: "deploy", arguments: '{"target":"production"}' });
    // The id the cut call streamed with (before the restart) names no other call of the run.
    expect(approval!.toolCallId).not.toBe("call_deploy");
    expect(approval!.toolCallId.startsWith(OWN_CALL_ID_PREFIX)).toBe(true);
    const held = waiting.toolCalls.filter((call) => call.status === "WAITING_APPROVAL");
    expect(held).toEqual([expect.objectContaining({ id: approval!.toolCallId, name: "deploy", arguments: '{"target":"production"}' })]);
    expect(waiting.toolCalls.map((call) => call.arguments).filter((text) => text.includes("staging"))).toEqual([]);
    expect(counted.calls()).toBe(0);
  }, 90_000);
});
