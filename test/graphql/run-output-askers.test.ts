// Whom a runOutput subscriber's ask for a running call's snapshot names (bus-run-output.ts counts
// the answer's cost against it): an access token's subscriber names its principal and the token,
// the principal's own subscriber the principal alone — so one end user asking over and over for a
// large run spends its own characters, not its principal's.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { CreateAccessTokenDocument, RunOutputDocument } from "../../sdk/generated/graphql.js";
import { createEventBus, type SnapshotAsker } from "../../src/events/topics.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { admit, expectType } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";

let t: TestApp | undefined;
afterAll(async () => t?.close());

it("a token's subscriber joining mid-call asks as its principal and token, the principal's own as the principal", async () => {
  const events = createEventBus();
  t = await startTestApp("pglite", {
    authRequired: true,
    listen: true,
    events,
    runtime: {
      model: new ScriptedModel({ name: "m", steps: () => ({ content: "word ".repeat(80), streamMs: 4_000 }) }),
      sandboxDir: mkdtempSync(path.join(tmpdir(), "run-output-askers-")),
    },
  });
  const asks: { runId: string; asker?: SnapshotAsker }[] = [];
  const listening = events.subscribe("run:output:wanted")[Symbol.asyncIterator]();
  void (async () => {
    for (let step = await listening.next(); !step.done; step = await listening.next()) asks.push(step.value);
  })();
  const key = await t.createPrincipal("Team backend");
  const client = t.as(key);
  const run = (await admit(client, { question: "Stream slowly" })).run;
  const token = expectType(
    (await client.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: run.id, operations: ["SUBSCRIBE"] }] } })).createAccessToken,
    "CreateAccessTokenSuccess",
  );
  // The call is streaming: its first frame went out.
  const frames = events.subscribe("run:output", idOfType(run.id, "Run")!)[Symbol.asyncIterator]();
  await frames.next();
  void frames.return?.();

  const holder = t.connect(token.token).subscribe(RunOutputDocument, { runId: run.id });
  await holder.next();
  const byToken = () => asks.find((ask) => ask.asker?.tokenId !== undefined)?.asker;
  await waitFor(() => byToken() !== undefined, 5_000);
  const owner = t.connect(key).subscribe(RunOutputDocument, { runId: run.id });
  await owner.next();
  const byOwner = () => asks.find((ask) => ask.asker !== undefined && ask.asker.tokenId === undefined)?.asker;
  await waitFor(() => byOwner() !== undefined, 5_000);
  expect(byToken()?.principalId).toEqual(expect.any(String));
  expect(byOwner()).toEqual({ principalId: byToken()?.principalId });
  await Promise.all([holder.return?.(), owner.return?.()]);
  expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
  await listening.return?.();
}, 60_000);
