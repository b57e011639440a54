// S2, R17 in one process: a worker driven by a run queue claims what the queue delivers, finds
// runs that were never announced through its sweep, and treats a delivery for a settled run as
// a no-op (the run row and its lease decide, not the queue): a claim takes deliveries only for the
// runs it took.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { InProcessRunQueue } from "../support/in-process-run-queue.js";
import { admit } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { allowTimeFor } from "../support/wait.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

it("a queue-driven worker sweeps up runs nobody announced, and ignores deliveries of settled runs", async () => {
  const queue = new InProcessRunQueue();
  t = await startTestApp("pglite", {
    runtime: { model: toolCallingModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-queue-")), leaseMs: 1_500, queue },
  });
  // Admission here does not announce on this queue: only the sweep (every 500 ms) can find the run.
  const { run } = await admit(t.client, { question: callTools() });
  const done = await settled(t.client, run.id, 10_000);
  expect(done.status).toBe("SUCCEEDED");
  const spans = done.trace!.spans.length;

  // Announcing the settled run again changes nothing.
  const rawId = Buffer.from(run.id, "base64").toString("utf8").replace(/^Run:/, "");
  await queue.enqueue([rawId, rawId]);
  await allowTimeFor("the worker to run the settled run again (it must not)", 400);
  // The claims it woke took no run, so they took no delivery: the one delivery is left for a claim that takes runs.
  expect((await queue.take(10)).map((delivery) => delivery.runId)).toEqual([rawId]);
  const again = (await t.client.runTrace(run.id))!;
  expect(again.status).toBe("SUCCEEDED");
  expect(again.trace!.spans.length).toBe(spans);
});
