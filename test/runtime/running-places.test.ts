// Running places as a deployment's worker hands them out, with runs that last (each waits in its
// model request until the test lets it go, as a long research run would):
// - with keys required (more than one principal may run) and the default
//   MAX_RUNNING_RUNS_PER_PRINCIPAL, one principal's backlog never holds every slot of a worker: the
//   run another principal admits afterwards starts at once, not when one of the backlog's runs ends;
// - a principal whose runs all come through its access tokens (its end users') runs as many at
//   once as its cap allows: the tokens keep half of its places for its API keys only while those
//   have runs waiting, and a running run is never stopped, so a key run admitted afterwards waits
//   for the next place that frees (token-running-share.test.ts: it takes that place first).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { CreateAccessTokenDocument } from "../../sdk/generated/graphql.js";
import type { DossierClient } from "../../sdk/client.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { startHeldModel } from "../support/held-model.js";
import { closedAfterEach } from "../support/per-test.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const closing = closedAfterEach();

/** An app whose in-process worker runs with the configuration `env` gives, every run held in its model request. */
async function heldDeployment(backend: (typeof backends)[number], env: Record<string, string>) {
  const config = loadConfig(env);
  const model = closing(await startHeldModel());
  const t = closing(
    await startTestApp(backend, {
      authRequired: config.authRequired,
      runtime: {
        model: model.model,
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-places-")),
        schedulerPollMs: 3_600_000,
        concurrency: config.worker.concurrency,
        maxRunningPerPrincipal: config.worker.maxRunningPerPrincipal,
      },
    }),
  );
  return { t, model };
}

/** Every run's status, by its question. */
async function statuses(t: TestApp): Promise<Record<string, string>> {
  const runs = await t.app.db.prisma.run.findMany({ select: { question: true, status: true } });
  return Object.fromEntries(runs.map((run) => [run.question, run.status]));
}

/** Waits until the model holds `count` requests, then until no claim would take another run. */
async function holding(t: TestApp, model: { asked(): number }, count: number): Promise<void> {
  await waitUntil(() => (model.asked() >= count ? true : undefined), 20_000, 20);
  await waitUntil(async () => ((await t.app.db.prisma.run.count({ where: { status: "RUNNING" } })) === model.asked() ? true : undefined), 20_000, 20);
}

/** Lets every held run go, and waits until all `count` runs succeeded. */
async function settleAll(t: TestApp, model: { release(): void }, count: number): Promise<void> {
  model.release();
  await waitUntil(async () => ((await t.app.db.prisma.run.count({ where: { status: "SUCCEEDED" } })) === count ? true : undefined), 30_000, 50);
}

describe.each(backends)("running places on %s", (backend) => {
  it("keys required, WORKER_CONCURRENCY=2 and the default cap: B's run starts while A's long runs hold their slot", async () => {
    const { t, model } = await heldDeployment(backend, { AUTH_REQUIRED: "true", WORKER_CONCURRENCY: "2" });
    const [a, b] = [t.as(await t.createPrincipal("A")), t.as(await t.createPrincipal("B"))];
    for (let i = 0; i < 3; i += 1) await admit(a, { question: `a${i}` });
    await holding(t, model, 1);
    await admit(b, { question: "b0" });
    // None of A's runs ended: B's run took the slot A's backlog left free.
    await holding(t, model, 2);
    expect(await statuses(t)).toEqual({ a0: "RUNNING", a1: "QUEUED", a2: "QUEUED", b0: "RUNNING" });
    expect(model.asked()).toBe(2);
    await settleAll(t, model, 4);
  }, 60_000);

  it("the access tokens' runs take every place of the principal's cap while its API key has no run waiting", async () => {
    const { t, model } = await heldDeployment(backend, { AUTH_REQUIRED: "true", WORKER_CONCURRENCY: "8", MAX_RUNNING_RUNS_PER_PRINCIPAL: "4" });
    const owner = t.as(await t.createPrincipal("Team"));
    const users: { client: DossierClient; workspaceId: string }[] = [];
    for (const name of ["first user's", "second user's"]) {
      const workspace = await createWorkspace(owner, name);
      const minted = (await owner.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: workspace.id, operations: ["ADMIT", "READ"] }] } }))
        .createAccessToken;
      users.push({ client: t.as(expectType(minted, "CreateAccessTokenSuccess").token), workspaceId: workspace.id });
    }
    for (let i = 0; i < 3; i += 1) {
      for (const [n, user] of users.entries()) await admit(user.client, { workspaceId: user.workspaceId, question: `user${n} ${i}` });
    }
    // Four of the six token runs run (the cap), though the tokens' share is two.
    await holding(t, model, 4);
    expect(Object.values(await statuses(t)).filter((status) => status === "RUNNING")).toHaveLength(4);
    // The key's runs admitted now wait: no running run is stopped to make room.
    await admit(owner, { question: "key 0" });
    await admit(owner, { question: "key 1" });
    await holding(t, model, 4);
    const now = await statuses(t);
    expect([now["key 0"], now["key 1"]]).toEqual(["QUEUED", "QUEUED"]);
    expect(Object.entries(now).filter(([question, status]) => question.startsWith("user") && status === "RUNNING")).toHaveLength(4);
    expect(model.asked()).toBe(4);
    await settleAll(t, model, 8);
  }, 60_000);
});
