// While its API keys have runs waiting, a principal's access tokens (its end users) together hold
// at most half of its running places (MAX_RUNNING_RUNS_PER_PRINCIPAL; at least one): the runs they
// admitted, queued or to resume, are claimed in the principal's order until the tokens hold their
// share, and its API keys' runs take the other places, even when the tokens' runs came first — and
// so when workers claim at once: the tokens' count is taken again under the principal's claim lock.
// The places no key run waits for are the tokens' too: a principal whose runs all come through its
// tokens runs as many at once as its cap allows. A running run is never stopped: a key run admitted
// while the tokens hold those places takes the next one that frees.
import { afterEach, describe, expect, it } from "vitest";
import { CreateAccessTokenDocument } from "../../sdk/generated/graphql.js";
import { batchClaims } from "../support/batch-claims.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** A principal's API key client, and its end user's access token admitting into a workspace of it. */
async function team(app: TestApp, name: string) {
  const owner = app.as(await app.createPrincipal(name));
  const workspace = await createWorkspace(owner, `${name}'s end user's`);
  const minted = (await owner.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: workspace.id, operations: ["ADMIT", "READ"] }] } }))
    .createAccessToken;
  const user = app.as(expectType(minted, "CreateAccessTokenSuccess").token);
  return { owner, user: (question: string) => admit(user, { workspaceId: workspace.id, question }) };
}

const admitAll = async (admitOne: (question: string) => Promise<unknown>, questions: string[]) => {
  for (const question of questions) await admitOne(question);
};

/** Ends runs as their attempt would: no longer holding a place. */
const end = (app: TestApp, questions: string[]) =>
  app.app.db.prisma.run.updateMany({ where: { question: { in: questions } }, data: { status: "SUCCEEDED", leaseOwner: null } });

describe.each(backends)("the access tokens' share of running places on %s", (backend) => {
  it("claims the tokens' runs until they hold half the places, then the key's runs behind them", async () => {
    t = await startTestApp(backend, { authRequired: true });
    const { owner, user } = await team(t, "Team");
    await admitAll(user, ["u1", "u2", "u3", "u4"]);
    await admitAll((question) => admit(owner, { question }), ["k1", "k2"]);
    const claim = batchClaims(t.app.db.prisma, { alive: true });
    // A cap of 4: the tokens' share is 2. One at a time, then all at once, the same runs.
    expect([await claim(1, 4), await claim(1, 4), await claim(1, 4)]).toEqual([["u1"], ["u2"], ["k1"]]);
    expect(await claim(10, 4)).toEqual(["k2"]);
    expect(await claim(10, 4)).toEqual([]);
    // One of the tokens' runs ends: their next run takes its place, and only it.
    await end(t, ["u1"]);
    expect(await claim(10, 4)).toEqual(["u3"]);
  });

  it("takes as many at once in one claim, and holds the tokens' runs to resume to the share too", async () => {
    t = await startTestApp(backend, { authRequired: true });
    const { owner, user } = await team(t, "Team");
    await admitAll(user, ["u1", "u2", "u3", "u4", "u5"]);
    await admitAll((question) => admit(owner, { question }), ["k1", "k2", "k3", "k4"]);
    const claim = batchClaims(t.app.db.prisma, { alive: true });
    // A cap of 6: the tokens' share is 3, the key's runs take the other three.
    expect(await claim(10, 6)).toEqual(["u1", "u2", "u3", "k1", "k2", "k3"]);
    // u1 waits for a decision and then resumes (RUNNING without a worker), k1 and u2 end.
    const prisma = t.app.db.prisma;
    await prisma.run.updateMany({ where: { question: "u1" }, data: { leaseOwner: null, leaseExpiresAt: new Date(0) } });
    await end(t, ["k1", "u2"]);
    // Tokens: u3 running, u1 to resume first, then u4 (older than k4); the share of 3 leaves u5 queued.
    expect(await claim(10, 6)).toEqual(["u1", "u4", "k4"]);
    expect(await claim(10, 6)).toEqual([]);
  });

  it("with no key run waiting, the tokens' runs take every place of the cap (3: the default for 4 slots with keys required)", async () => {
    t = await startTestApp(backend, { authRequired: true });
    const { owner, user } = await team(t, "Team");
    await admitAll(user, ["u1", "u2", "u3", "u4"]);
    const claim = batchClaims(t.app.db.prisma, { alive: true });
    expect(await claim(4, 3)).toEqual(["u1", "u2", "u3"]);
    expect(await claim(4, 3)).toEqual([]);
    // The key's run admitted now waits for the next place that frees, and takes it before u4.
    await admit(owner, { question: "k1" });
    expect(await claim(4, 3)).toEqual([]);
    await end(t, ["u1"]);
    expect(await claim(4, 3)).toEqual(["k1"]);
    await end(t, ["u2"]);
    expect(await claim(4, 3)).toEqual(["u4"]);
  });

  it("the places the key's waiting runs leave are the tokens': one key run waiting, a cap of 4 runs three token runs beside it", async () => {
    t = await startTestApp(backend, { authRequired: true });
    const { owner, user } = await team(t, "Team");
    await admitAll(user, ["u1", "u2", "u3", "u4"]);
    await admit(owner, { question: "k1" });
    const claim = batchClaims(t.app.db.prisma, { alive: true });
    expect([await claim(1, 4), await claim(1, 4), await claim(1, 4)]).toEqual([["u1"], ["u2"], ["u3"]]);
    expect(await claim(10, 4)).toEqual(["k1"]);
    expect(await claim(10, 4)).toEqual([]);
  });

  it("a cap of 1 leaves the tokens that one place: their run is not held back for ever", async () => {
    t = await startTestApp(backend, { authRequired: true });
    const { user } = await team(t, "Team");
    await admitAll(user, ["u1", "u2"]);
    const claim = batchClaims(t.app.db.prisma, { alive: true });
    expect(await claim(10, 1)).toEqual(["u1"]);
    expect(await claim(10, 1)).toEqual([]);
  });
});

describe.runIf(backends.includes("postgres"))("the access tokens' share when workers claim at once on postgres", () => {
  /** Ten runs of the principal's end user, then three of its API key. */
  async function backlog(app: TestApp): Promise<void> {
    const { owner, user } = await team(app, "Team");
    const users = Array.from({ length: 10 }, (_, i) => `u${i}`);
    await admitAll(user, users);
    await admitAll((question) => admit(owner, { question }), ["k0", "k1", "k2"]);
  }

  async function running(app: TestApp): Promise<{ tokens: number; keys: number }> {
    const runs = await app.app.db.prisma.run.findMany({ where: { status: "RUNNING" }, select: { admittedByToken: true } });
    return { tokens: runs.filter((run) => run.admittedByToken !== null).length, keys: runs.filter((run) => run.admittedByToken === null).length };
  }

  it("twelve concurrent claims of one run give the tokens two of the four places, the key the other two", async () => {
    t = await startTestApp("postgres", { authRequired: true });
    await backlog(t);
    const claim = batchClaims(t.app.db.prisma, { alive: true });
    const claimed = (await Promise.all(Array.from({ length: 12 }, () => claim(1, 4)))).flat();
    expect(claimed).toHaveLength(4);
    expect(await running(t)).toEqual({ tokens: 2, keys: 2 });
  });

  it("four concurrent claims of five runs each give the tokens three of the six places", async () => {
    t = await startTestApp("postgres", { authRequired: true });
    await backlog(t);
    const claim = batchClaims(t.app.db.prisma, { alive: true });
    const claimed = (await Promise.all(Array.from({ length: 4 }, () => claim(5, 6)))).flat();
    expect(claimed).toHaveLength(6);
    expect(await running(t)).toEqual({ tokens: 3, keys: 3 });
  });

  it("twelve concurrent claims of one run give the tokens every place their key's one waiting run leaves", async () => {
    t = await startTestApp("postgres", { authRequired: true });
    const { owner, user } = await team(t, "Team");
    await admitAll(
      user,
      Array.from({ length: 10 }, (_, i) => `u${i}`),
    );
    await admit(owner, { question: "k0" });
    const claim = batchClaims(t.app.db.prisma, { alive: true });
    const claimed = (await Promise.all(Array.from({ length: 12 }, () => claim(1, 4)))).flat();
    expect(claimed).toHaveLength(4);
    expect(await running(t)).toEqual({ tokens: 3, keys: 1 });
  });

  it("four concurrent claims of five runs each give a principal's tokens alone all six places", async () => {
    t = await startTestApp("postgres", { authRequired: true });
    const { user } = await team(t, "Team");
    await admitAll(
      user,
      Array.from({ length: 10 }, (_, i) => `u${i}`),
    );
    const claim = batchClaims(t.app.db.prisma, { alive: true });
    const claimed = (await Promise.all(Array.from({ length: 4 }, () => claim(5, 6)))).flat();
    expect(claimed).toHaveLength(6);
    expect(await running(t)).toEqual({ tokens: 6, keys: 0 });
  });

  it("a claim that chose the tokens' runs before another claim of the principal committed its tokens' share takes the key's runs alone", async () => {
    t = await startTestApp("postgres", { authRequired: true });
    const { owner, user } = await team(t, "Team");
    await admitAll(user, ["held a", "held b", "held c", "u1", "u2"]);
    await admitAll((question) => admit(owner, { question }), ["k1", "k2", "k3"]);
    const prisma = t.app.db.prisma;
    const held = { question: { in: ["held a", "held b", "held c"] } };
    await prisma.run.updateMany({ where: held, data: { status: "PAUSED" } });
    const { ownerId } = await prisma.run.findFirstOrThrow({ where: { question: "u1" } });
    const claim = batchClaims(prisma, { alive: true });
    let claimed: Promise<string[]> | undefined;
    // Another claim of the principal holds its claim lock while its three token runs start: the
    // claim statement of two runs, which saw none of them running, chooses u1 and u2 (the oldest),
    // then waits for the lock.
    await prisma.$transaction(
      async (tx) => {
        await tx.$queryRawUnsafe("SELECT pg_advisory_xact_lock(hashtextextended('claim-principal:' || $1, 0))::text", ownerId);
        await tx.run.updateMany({ where: held, data: { status: "RUNNING", leaseOwner: "another-worker", leaseExpiresAt: new Date(Date.now() + 600_000) } });
        claimed = claim(2, 6);
        await waitUntil(async () => {
          const [row] = await prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH RECURSIVE running%'`;
          return (row?.n ?? 0) > 0 ? true : undefined;
        }, 10_000);
      },
      { timeout: 20_000 },
    );
    // Counted under the lock, the tokens hold their share of 3 (the key's three runs wait for the
    // other three): the claim takes the key's runs alone.
    expect(await claimed).toEqual(["k1", "k2"]);
    expect(await running(t)).toEqual({ tokens: 3, keys: 2 });
  });
});
