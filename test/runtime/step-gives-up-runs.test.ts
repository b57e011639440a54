// An attempt never leaves a tool running behind it. Two approved calls go on in one step; the
// database fails (once) marking the second begun: the attempt hands the run back only once the
// first call stopped, so the next attempt never runs while it does; that attempt finds the first
// call begun (repaired: it may have run) and runs the second on its decision — nobody is asked
// again. And whatever a finished attempt's tools still listen to is aborted once it ended.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DecideToolCallDocument, RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/graphql/global-id.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

describe.each(backends)("a step that gives up on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const events: string[] = [];
  let leftSignal: AbortSignal | undefined;
  // Runs until stopped (which takes it 3 s: it winds down what it started, longer than the run's
  // backoff before it resumes), or for 5 s if nothing stops it.
  const deploy: Tool = {
    schema: { name: "deploy", description: "deploys", parameters: { type: "object" } },
    execute: (_args, { signal }) =>
      new Promise((resolve, reject) => {
        events.push("deploy started");
        const timer = setTimeout(() => {
          events.push("deploy finished");
          resolve("deployed");
        }, 5_000);
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          setTimeout(() => {
            events.push("deploy stopped");
            reject(new Error("stopped"));
          }, 3_000);
        });
      }),
  };
  const notify: Tool = {
    schema: { name: "notify", description: "notifies", parameters: { type: "object" } },
    execute: async () => {
      events.push("notify ran");
      return "notified";
    },
  };
  // Returns at once, leaving something behind that listens to its signal.
  const background: Tool = {
    schema: { name: "background", description: "starts background work", parameters: { type: "object" } },
    execute: async (_args, { signal }) => {
      leftSignal = signal;
      return "started";
    },
  };

  async function start() {
    events.length = 0;
    t = await startTestApp(backend, {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-step-gives-up-")),
        extraTools: [deploy, notify, background],
        // A lease long enough that a loaded machine's late renewal never loses it.
        leaseMs: 20_000,
        sweepMs: 200,
        approvals: { rules: { deploy: "always", notify: "always", "*": "never" } },
      },
    });
    const key = await t.createPrincipal("owner");
    return { t, client: t.as(key) };
  }

  it("hands the run back only once the running call stopped; the other call runs on its decision, asked once", async () => {
    const { t, client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "deploy" }, { name: "notify" }) });
    const pending = await waitUntil(async () => {
      const current = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return current.status === "WAITING" ? current.pendingApprovals.edges.map((edge) => edge.node) : undefined;
    }, 20_000);
    expect(pending.map((approval) => approval.toolName).sort()).toEqual(["deploy", "notify"]);
    // Marking notify's call begun fails once, while deploy runs: the connection was reset.
    const store = t.app.services.toolApprovals;
    const notifyId = (await store.ofRun(idOfType(run.id, "Run")!)).find((approval) => approval.toolName === "notify")!.id;
    const markStarted = store.markStarted.bind(store);
    let failed = 0;
    store.markStarted = async (tx, id, at) => {
      if (id === notifyId && failed === 0) {
        failed += 1;
        await waitUntil(() => (events.includes("deploy started") ? true : undefined));
        throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
      }
      return markStarted(tx, id, at);
    };
    for (const approval of pending) {
      const decided = await client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: approval.toolCallId, decision: "APPROVE" } });
      expectType(decided.decideToolCall, "DecideToolCallSuccess");
    }
    const done = await settled(client, run.id);
    expect(failed).toBe(1);
    expect(done.status).toBe("SUCCEEDED");
    expect(events).toEqual(["deploy started", "deploy stopped", "notify ran"]);
    expect(done.attempts.map((attempt) => attempt.outcome)).toEqual(["HANDED_BACK", "HANDED_BACK", "COMPLETED"]);
    // The person decided two calls, once each: no call was put to them again.
    const approvals = await store.ofRun(idOfType(run.id, "Run")!);
    expect(approvals.map((approval) => [approval.toolName, approval.decision]).sort()).toEqual([
      ["deploy", "APPROVE"],
      ["notify", "APPROVE"],
    ]);
    expect(done.answer).toContain("notified");
  });

  it("aborts what a finished attempt's tools still listen to", async () => {
    const { client } = await start();
    leftSignal = undefined;
    const { run } = await admit(client, { question: callTools({ name: "background" }) });
    expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
    expect((leftSignal as AbortSignal | undefined)?.aborted).toBe(true);
  });
});
