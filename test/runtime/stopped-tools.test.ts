// A cancelled run's attempt ends only once its tools have stopped: a tool that takes its time to
// wind down once aborted (a deploy rolling back) finishes winding down before the run's attempt
// ends and gives back the conversation's slot, so the run queued behind it in the conversation
// begins only then. The cancellation itself is final at once (cancelRun answers CANCELLED), and what the
// tool returned after the stop is in the server's log, as such, never in the run's.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CancelRunDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";
import { warningLogger } from "../support/warning-logger.js";

/** How long the deploy takes to wind down once aborted. */
const WIND_DOWN_MS = 2_000;

describe.each(backends)("a cancelled run's slow-stopping tool on %s", (backend) => {
  let t: TestApp;
  const order: string[] = [];
  let stoppedAt = 0;
  const { logger, warnings } = warningLogger();

  const deploy: Tool = {
    schema: { name: "deploy", description: "deploys, and rolls back when stopped", parameters: { type: "object" } },
    execute: (_args, { signal }) =>
      new Promise((resolve) => {
        order.push("deploy started");
        signal.addEventListener("abort", () =>
          setTimeout(() => {
            order.push("deploy stopped");
            stoppedAt = Date.now();
            resolve("rolled back 3 of 5 hosts");
          }, WIND_DOWN_MS),
        );
      }),
  };
  const report: Tool = {
    schema: { name: "report", description: "reports", parameters: { type: "object" } },
    execute: async () => {
      order.push("next run's tool");
      return "reported";
    },
  };

  beforeAll(async () => {
    t = await startTestApp(backend, {
      logger,
      runtime: {
        model: toolCallingModel("stopped-tools"),
        extraTools: [deploy, report],
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-stopped-tools-")),
        toolTimeoutMs: 30_000,
      },
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it("the run queued behind it begins only once the tool has stopped", { timeout: 60_000 }, async () => {
    const first = await admit(t.client, { question: callTools({ name: "deploy" }) });
    await waitFor(() => order.includes("deploy started"), 20_000);
    const second = await admit(t.client, { conversationId: first.run.conversation.id, question: callTools({ name: "report" }), multitask: "ENQUEUE" });
    const cancelled = expectType((await t.client.request(CancelRunDocument, { input: { runId: first.run.id } })).cancelRun, "CancelRunSuccess");
    expect(cancelled.run.status).toBe("CANCELLED");

    expect(await settled(t.client, second.run.id, 30_000)).toMatchObject({ status: "SUCCEEDED", answer: "reported" });
    expect(order).toEqual(["deploy started", "deploy stopped", "next run's tool"]);
    // The cancelled run's attempt ended (its lease and the conversation's slot given back) once the tool had stopped.
    const attempts = await t.app.db.prisma.runAttempt.findMany({ where: { runId: idOfType(first.run.id, "Run")! } });
    expect(attempts.map((a) => [a.outcome, (a.endedAt?.getTime() ?? 0) >= stoppedAt])).toEqual([["COMPLETED", true]]);
    const late = warnings.filter(([message]) => message.startsWith("a tool call returned after its run was stopped"));
    expect(late.map(([, fields]) => [fields?.tool, fields?.output])).toEqual([["deploy", "rolled back 3 of 5 hosts"]]);
    // The cancelled run keeps none of it: the call has no result in its log.
    const firstRun = await settled(t.client, first.run.id);
    expect(JSON.stringify(firstRun)).not.toContain("rolled back");
  });
});
