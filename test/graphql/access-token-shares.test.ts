// One end user's access token does not take from the principal, nor from the other end users, what
// they need to admit runs:
// - the principal's access tokens together hold at most half of its queued places
//   (MAX_QUEUED_RUNS_PER_PRINCIPAL): one more run of any of its tokens is a QueueFullError saying so,
//   on either admission path and on resuming a paused run a token admitted, while its API keys admit
//   into the other half; a token's run that leaves QUEUED frees a place of the tokens' share;
// - one end user (createAccessToken's endUser: every token minted for them is theirs) holds at
//   most a quarter of the tokens' share, at least one place: its page admitting in a loop, even side
//   by side, leaves the other end users their places;
// - an access token's idempotency keys are its grants' own: another end user's token uses the same
//   key for a run of its own (no IdempotencyConflictError telling it the key was used), the team's
//   API keys too, while a token minted again for the same grants replays its run; so with createScore
//   (a score is deleted only by the token that made it: a replay tells nothing of who asked for it)
//   and with steerRun: two end users steering one run each send their own "msg-1".
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import {
  AdmitRunDocument,
  type AdmitRunInput,
  CancelRunDocument,
  CreateAccessTokenDocument,
  CreateScoreConfigDocument,
  CreateScoreDocument,
  type CreateScoreInput,
  DeleteScoreDocument,
  PauseRunDocument,
  ResumeRunDocument,
  SteerRunDocument,
} from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType, startConversation } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const LIMIT = 6;
const SHARE = LIMIT / 2;
const TOKENS_FULL = `Your principal's access tokens already hold ${SHARE} runs queued, half of the ${LIMIT} one principal may have waiting`;
const END_USER_FULL = `This end user's access tokens already hold 1 run queued, the most one end user may have waiting (a quarter of the ${SHARE}`;

const admitRun = async (client: DossierClient, input: AdmitRunInput) => (await client.request(AdmitRunDocument, { input })).admitRun;

describe.each(backends)("access tokens' shares of their principal on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend, { authRequired: true, maxQueuedRunsPerPrincipal: LIMIT });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A new principal's API key client, and a token client for `operations` on a resource of it. */
  const team = async (name: string) => {
    const owner = t.as(await t.createPrincipal(name));
    const token = async (resourceId: string, operations: ("ADMIT" | "READ" | "CANCEL" | "SCORE")[] = ["ADMIT", "READ", "CANCEL"], endUser?: string) => {
      const minted = (await owner.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId, operations }], endUser } })).createAccessToken;
      return t.as(expectType(minted, "CreateAccessTokenSuccess").token);
    };
    return { owner, token };
  };

  it("holds the tokens to half the queued places on every path, and leaves the API keys the rest", async () => {
    const { owner, token } = await team("Queue share");
    const [w1, w2] = [await createWorkspace(owner, "first user's"), await createWorkspace(owner, "second user's")];
    const conversation = await startConversation(owner);
    const [a, b, c] = [await token(w1.id, undefined, "a"), await token(w2.id, undefined, "b"), await token(conversation.id, undefined, "c")];
    const d = await token(w2.id, ["ADMIT", "READ"], "d");

    // One end user's page takes one place, not the tokens' whole share; nor does a token minted again for that end user.
    const ofA = await admit(a, { workspaceId: w1.id, question: "a 1" });
    const refusedA = expectType(await admitRun(a, { workspaceId: w1.id, question: "a 2" }), "QueueFullError");
    expect([refusedA.maxQueuedRuns, refusedA.message]).toEqual([LIMIT, expect.stringContaining(END_USER_FULL)]);
    expect(expectType(await admitRun(await token(w1.id, undefined, "a"), { workspaceId: w1.id, question: "a 2" }), "QueueFullError").message).toContain(
      END_USER_FULL,
    );
    // Another end user, through a conversation (the transactional path): its place, then its own share is full.
    const ofC = await admit(c, { conversationId: conversation.id, question: "c 1" });
    const enqueued = await admitRun(c, { conversationId: conversation.id, question: "c 2", multitask: "ENQUEUE" });
    expect(expectType(enqueued, "QueueFullError").message).toContain(END_USER_FULL);
    // A third end user takes the tokens' last place; a fourth is refused for the tokens' share.
    await admit(b, { workspaceId: w2.id, question: "b 1" });
    expect(expectType(await admitRun(d, { workspaceId: w2.id, question: "d 1" }), "QueueFullError").message).toContain(TOKENS_FULL);

    // The team's API key admits into the other half, then the principal's queue is full for all.
    await admit(owner, { question: "key 1" });
    const ofKey = await admit(owner, { question: "key 2" });
    await admit(owner, { question: "key 3" });
    const refusedKey = expectType(await admitRun(owner, { question: "key 4" }), "QueueFullError");
    expect(refusedKey.message).toContain(`You already have ${LIMIT} runs queued`);

    // A token's run cancelled frees a place of the tokens' share: another token takes it, and only one.
    await a.request(CancelRunDocument, { input: { runId: ofA.run.id } });
    await admit(d, { workspaceId: w2.id, question: "d 2" });
    expect(expectType(await admitRun(c, { conversationId: conversation.id, question: "c 3", multitask: "ENQUEUE" }), "QueueFullError").message).toContain(
      TOKENS_FULL,
    );

    // Paused, a token's run gives its place back; resumed, it takes one of the tokens' share again.
    expectType((await owner.request(PauseRunDocument, { input: { runId: ofC.run.id } })).pauseRun, "PauseRunSuccess");
    await owner.request(CancelRunDocument, { input: { runId: ofKey.run.id } });
    await admit(a, { workspaceId: w1.id, question: "a 3" });
    const resumed = expectType((await owner.request(ResumeRunDocument, { input: { runId: ofC.run.id } })).resumeRun, "QueueFullError");
    expect(resumed.message).toContain(TOKENS_FULL);
    // The key's place is still there for the key.
    await admit(owner, { question: "key 5" });
  });

  it("leaves another end user its place while one end user's page floods the queue side by side", async () => {
    const { owner, token } = await team("Flood");
    const [w1, w2] = [await createWorkspace(owner, "Mallory's"), await createWorkspace(owner, "Alice's")];
    // Mallory's page sends 12 admissions at once, half of them with a token minted again for her.
    const pages = [await token(w1.id, undefined, "mallory"), await token(w1.id, undefined, "mallory")];
    const flood = await Promise.all(Array.from({ length: 12 }, (_, i) => admitRun(pages[i % 2]!, { workspaceId: w1.id, question: `flood ${i}` })));
    const kinds = flood.map((answer) => answer.__typename);
    expect([kinds.filter((kind) => kind === "AdmitRunSuccess").length, kinds.filter((kind) => kind === "QueueFullError").length]).toEqual([1, 11]);
    for (const answer of flood) if (answer.__typename === "QueueFullError") expect(answer.message).toContain(END_USER_FULL);
    // Alice's first run is admitted, while Mallory's are refused.
    await admit(await token(w2.id, undefined, "alice"), { workspaceId: w2.id, question: "Alice's" });
    expect(await t.app.db.prisma.run.count({ where: { workspaceId: dbId(w1.id), status: "QUEUED" } })).toBe(1);
  });

  it("scopes a token's idempotency keys to its grants: another's use of the key is its own run, its own retry replays", async () => {
    const { owner, token } = await team("Idempotency scope");
    const [w1, w2] = [await createWorkspace(owner, "first user's"), await createWorkspace(owner, "second user's")];
    const a = await token(w1.id);
    const first = await admit(a, { workspaceId: w1.id, question: "from A", idempotencyKey: "msg-1" });

    const b = await admit(await token(w2.id), { workspaceId: w2.id, question: "from B", idempotencyKey: "msg-1" });
    expect([b.replayed, b.run.id === first.run.id, b.run.question]).toEqual([false, false, "from B"]);
    const ofKey = await admit(owner, { question: "from the team", idempotencyKey: "msg-1" });
    expect([ofKey.replayed, ofKey.run.id === first.run.id]).toEqual([false, false]);

    // The same end user's page with a new token for the same grants: its retry answers its run.
    const again = await admit(await token(w1.id), { workspaceId: w1.id, question: "from A", idempotencyKey: "msg-1" });
    expect([again.replayed, again.run.id]).toEqual([true, first.run.id]);
    expect((await admitRun(a, { workspaceId: w1.id, question: "other", idempotencyKey: "msg-1" })).__typename).toBe("IdempotencyConflictError");
    // Each scope's retry still answers its own run.
    const bAgain = await admit(await token(w2.id), { workspaceId: w2.id, question: "from B", idempotencyKey: "msg-1" });
    expect([bAgain.replayed, bAgain.run.id]).toEqual([true, b.run.id]);
  });

  it("gives named end users with the same grants keys of their own: Bob's msg-1 is his run, never Alice's", async () => {
    const { owner, token } = await team("Named end users");
    const shared = await createWorkspace(owner, "one workspace both read");
    const alice = await admit(await token(shared.id, undefined, "alice"), { workspaceId: shared.id, question: "Alice's", idempotencyKey: "msg-1" });
    const bob = await admit(await token(shared.id, undefined, "bob"), { workspaceId: shared.id, question: "Bob's", idempotencyKey: "msg-1" });
    expect([bob.replayed, bob.run.id === alice.run.id, bob.run.question]).toEqual([false, false, "Bob's"]);
    // Alice's page reloaded: her retry answers her run.
    const again = await admit(await token(shared.id, undefined, "alice"), { workspaceId: shared.id, question: "Alice's", idempotencyKey: "msg-1" });
    expect([again.replayed, again.run.id]).toEqual([true, alice.run.id]);
  });

  it("scopes a token's score idempotency keys to its grants as well", async () => {
    const { owner, token } = await team("Score scope");
    const [w1, w2] = [await createWorkspace(owner, "first user's"), await createWorkspace(owner, "second user's")];
    expectType((await owner.request(CreateScoreConfigDocument, { input: { name: "helpful", kind: "BOOLEAN" } })).createScoreConfig, "CreateScoreConfigSuccess");
    const [ofA, ofB] = [await admit(owner, { workspaceId: w1.id, question: "a" }), await admit(owner, { workspaceId: w2.id, question: "b" })];
    const vote = async (client: DossierClient, input: Omit<CreateScoreInput, "configName" | "source" | "idempotencyKey">) =>
      (await client.request(CreateScoreDocument, { input: { ...input, configName: "helpful", source: "HUMAN", idempotencyKey: "vote-1" } })).createScore;
    const first = expectType(await vote(await token(w1.id, ["READ", "SCORE"]), { targetId: ofA.run.id, value: 1 }), "CreateScoreSuccess");

    const other = expectType(await vote(await token(w2.id, ["READ", "SCORE"]), { targetId: ofB.run.id, value: 0 }), "CreateScoreSuccess");
    expect([other.score.id === first.score.id, other.score.targetId]).toEqual([false, ofB.run.id]);
    const again = expectType(await vote(await token(w1.id, ["READ", "SCORE"]), { targetId: ofA.run.id, value: 1 }), "CreateScoreSuccess");
    expect(again.score.id).toBe(first.score.id);
    // Another end user's token of the same grants shares the key's scope, not the score: only its maker deletes it.
    const deleted = await (await token(w1.id, ["READ", "SCORE"])).request(DeleteScoreDocument, { input: { id: first.score.id } });
    expect(deleted.deleteScore.__typename).toBe("NotFoundError");
  });

  it("scopes a token's steering keys to its grants: two end users on one run each send their own message under one key", async () => {
    const { owner, token } = await team("Steer scope");
    const w = await createWorkspace(owner, "shared");
    // A token steers only a run that reads no more than it may: one a token reading the same workspace admitted.
    const { run } = await admit(await token(w.id, ["ADMIT", "READ"]), { workspaceId: w.id, question: "q" });
    const steer = async (client: DossierClient, text: string) =>
      (await client.request(SteerRunDocument, { input: { runId: run.id, text, idempotencyKey: "msg-1" } })).steerRun;
    const fromA = expectType(await steer(await token(w.id, ["ADMIT", "READ"]), "Only cite 2024 sources."), "SteerRunSuccess");
    const fromB = expectType(await steer(await token(w.id, ["READ", "ADMIT", "CANCEL"]), "Please write in French."), "SteerRunSuccess");
    const fromKey = expectType(await steer(owner, "Keep it short."), "SteerRunSuccess");
    expect(new Set([fromA.input.id, fromB.input.id, fromKey.input.id]).size).toBe(3);

    // A's page with a new token for the same grants (in another order): its retry answers its input.
    const page2 = await token(w.id, ["READ", "ADMIT"]);
    expect(expectType(await steer(page2, "Only cite 2024 sources."), "SteerRunSuccess").input.id).toBe(fromA.input.id);
    expect((await steer(page2, "Something else.")).__typename).toBe("IdempotencyConflictError");
    expect(expectType(await steer(owner, "Keep it short."), "SteerRunSuccess").input.id).toBe(fromKey.input.id);
    expect(await t.app.db.prisma.runInput.count({ where: { runId: dbId(run.id) } })).toBe(3);
  });
});
