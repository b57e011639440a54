// Forks of a conversation (issue 38, point 5): forkConversation at message k of a 200-message
// conversation gives a log that is the parent's 1..k, shared and not copied, then the fork's own.
// Runs in a fork (and in a fork of a fork) see exactly that; the parent's rows stay byte-identical
// and storage grows by the forks' own messages only; a run in the parent afterwards is unaffected.
// The log of a fork of a fork is read with as many statements as a root's; a chain of forks is
// at most MAX_FORK_DEPTH deep.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConversationDocument, ForkConversationDocument } from "../../sdk/generated/graphql.js";
import { decodeGlobalId, encodeGlobalId } from "../../src/domain/global-id.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { MAX_FORK_DEPTH } from "../../src/domain/research/conversation-lineage.js";
import { readLog } from "../../src/runtime/adapters/prisma-conversation-log.js";
import type { ModelRequest } from "../../src/runtime/ports/model.js";
import { backends, openTestDatabase } from "../support/databases.js";
import { admit, expectType, startConversation } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SIZE = 200;
/** The seeded text of message `seq`: a question on odd seqs, its answer on even ones. */
const text = (seq: number) => (seq % 2 === 1 ? `question ${seq}` : `answer ${seq}`);

describe.each(backends)("forkConversation on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];
  /** What the model was shown per question: the log's user and assistant texts, oldest first. */
  const seen = new Map<string, string[]>();
  const model = new ScriptedModel({
    name: "forks",
    steps: (request: ModelRequest) => {
      const texts = request.messages.filter((m) => m.role === "user" || m.role === "assistant").map((m) => String(m.content));
      const question = texts.at(-1)!;
      seen.set(question, texts);
      return { content: `reply to ${question}` };
    },
  });

  beforeAll(async () => {
    t = await startTestApp(backend, {
      database: () => openTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-forks-")), leaseMs: 5_000, sweepMs: 200 },
    });
  });
  afterAll(() => t?.close());

  const prisma = () => t.app.db.prisma;
  const rowsOf = (conversationId: string) => prisma().message.findMany({ where: { conversationId }, orderBy: { seq: "asc" } });
  const fork = async (conversationId: string, atMessageId: string) =>
    (await t.client.request(ForkConversationDocument, { input: { conversationId, atMessageId } })).forkConversation;
  const messageId = (rows: { id: string }[], seq: number) => encodeGlobalId("Message", rows[seq - 1]!.id);
  const ask = async (conversationId: string, question: string) => {
    const { run } = await admit(t.client, { conversationId, question });
    const done = await settled(t.client, run.id, 60_000);
    expect([done.status, done.failureReason]).toEqual(["SUCCEEDED", null]);
  };

  it("shares the prefix with every run of the fork, copies nothing and leaves the parent as it was", async () => {
    const parent = await startConversation(t.client, "Long chat");
    const parentId = decodeGlobalId(parent.id)!.id;
    // Seeded directly: 200 messages, the way the log stores them (seq from 1).
    await prisma().message.createMany({
      data: Array.from({ length: SIZE }, (_, i) => ({
        conversationId: parentId,
        seq: i + 1,
        role: i % 2 === 0 ? ("USER" as const) : ("ASSISTANT" as const),
        content: text(i + 1),
      })),
    });
    await prisma().conversation.update({ where: { id: parentId }, data: { messageCount: SIZE } });
    const parentRows = await rowsOf(parentId);
    const before = JSON.stringify(parentRows);
    const storedBefore = await prisma().message.count();

    // Fork after answer 120: regenerate from there with a new question.
    const k = 120;
    const forked = expectType(await fork(parent.id, messageId(parentRows, k)), "ForkConversationSuccess").conversation;
    expect(forked.forkedFrom).toEqual({ conversation: { id: parent.id }, message: { id: messageId(parentRows, k), seq: String(k) } });
    expect(await prisma().message.count()).toBe(storedBefore);
    await ask(forked.id, "edited question");
    const expected = [...Array.from({ length: k }, (_, i) => text(i + 1)), "edited question"];
    expect(seen.get("edited question")).toEqual(expected);

    // The fork's log through GraphQL: the shared prefix, then its own two, seq continuing.
    const page = expectType((await t.client.request(ConversationDocument, { id: forked.id, first: 200 })).node!, "Conversation");
    expect(page.messages.edges.map((e) => e.node.content)).toEqual([...expected, "reply to edited question"]);
    expect(page.messages.edges.map((e) => Number(e.node.seq))).toEqual(Array.from({ length: k + 2 }, (_, i) => i + 1));

    // A fork of the fork inside the prefix it shares, and one after its own answer.
    const forkRows = page.messages.edges.map((e) => ({ id: decodeGlobalId(e.node.id)!.id }));
    const early = expectType(await fork(forked.id, messageId(forkRows, 60)), "ForkConversationSuccess").conversation;
    const late = expectType(await fork(forked.id, messageId(forkRows, k + 2)), "ForkConversationSuccess").conversation;
    expect(early.forkedFrom?.message).toEqual({ id: messageId(parentRows, 60), seq: "60" });
    await ask(early.id, "early question");
    await ask(late.id, "late question");
    expect(seen.get("early question")).toEqual([...Array.from({ length: 60 }, (_, i) => text(i + 1)), "early question"]);
    expect(seen.get("late question")).toEqual([...expected, "reply to edited question", "late question"]);

    // The parent: byte-identical, and a run in it now sees its own 200 and nothing of the forks.
    expect(JSON.stringify(await rowsOf(parentId))).toBe(before);
    expect(await prisma().message.count()).toBe(storedBefore + 6);
    await ask(parent.id, "parent question");
    expect(seen.get("parent question")).toEqual([...Array.from({ length: SIZE }, (_, i) => text(i + 1)), "parent question"]);
    expect(JSON.stringify((await rowsOf(parentId)).slice(0, SIZE))).toBe(before);
    const forkAfter = expectType((await t.client.request(ConversationDocument, { id: forked.id, first: 200 })).node!, "Conversation");
    expect(forkAfter.messages.edges).toHaveLength(k + 2);

    // The log of a fork of a fork costs the statements a root's does: no walk up the chain.
    const statementsOf = async (id: string) => {
      statements.length = 0;
      const log = await readLog(prisma(), decodeGlobalId(id)!.id);
      // The log's own reads: the worker's sweeps may run meanwhile and read other tables.
      return { length: log.length, count: statements.filter((sql) => /"(message|conversation)"/.test(sql)).length };
    };
    const root = await statementsOf(parent.id);
    const grandchild = await statementsOf(early.id);
    expect(root.length).toBe(SIZE + 2);
    expect(grandchild.length).toBe(62);
    expect(grandchild.count).toBe(root.count);
    expect(root.count).toBeLessThanOrEqual(2);
  });

  it("refuses a message outside the log, a point inside a tool-call exchange and another principal's conversation", async () => {
    const parent = await startConversation(t.client, "Tools");
    const parentId = decodeGlobalId(parent.id)!.id;
    const calls = [{ id: "call-1", name: "lookup", arguments: "{}" }];
    await prisma().message.createMany({
      data: [
        { conversationId: parentId, seq: 1, role: "USER", content: "look it up" },
        { conversationId: parentId, seq: 2, role: "ASSISTANT", content: "", toolCalls: calls },
        { conversationId: parentId, seq: 3, role: "TOOL", content: "found", toolCallId: "call-1", toolName: "lookup" },
        { conversationId: parentId, seq: 4, role: "ASSISTANT", content: "it is found" },
      ],
    });
    await prisma().conversation.update({ where: { id: parentId }, data: { messageCount: 4 } });
    const rows = await rowsOf(parentId);
    const inside = expectType(await fork(parent.id, messageId(rows, 2)), "ValidationError");
    expect(inside.issues.map((issue) => issue.field)).toEqual(["atMessageId"]);
    expectType(await fork(parent.id, messageId(rows, 3)), "ForkConversationSuccess");

    const other = await startConversation(t.client, "Other");
    const otherId = decodeGlobalId(other.id)!.id;
    await prisma().message.create({ data: { conversationId: otherId, seq: 1, role: "USER", content: "elsewhere" } });
    await prisma().conversation.update({ where: { id: otherId }, data: { messageCount: 1 } });
    const foreign = await prisma().message.findFirstOrThrow({ where: { conversationId: otherId } });
    expectType(await fork(parent.id, encodeGlobalId("Message", foreign.id)), "ValidationError");

    const stranger = t.as(await t.createPrincipal("mallory"));
    const refused = (await stranger.request(ForkConversationDocument, { input: { conversationId: parent.id, atMessageId: messageId(rows, 1) } }))
      .forkConversation;
    expectType(refused, "NotFoundError");
    const root = expectType((await t.client.request(ConversationDocument, { id: parent.id, first: 1 })).node!, "Conversation");
    expect(root.forkedFrom).toBeNull();
  });

  /** Adds `contents` to a conversation as its own next messages, the way the log stores them. */
  const append = async (conversationId: string, contents: string[]) => {
    const row = await prisma().conversation.findUniqueOrThrow({ where: { id: conversationId }, select: { messageCount: true } });
    await prisma().message.createMany({
      data: contents.map((content, i) => ({ conversationId, seq: row.messageCount + i + 1, role: "USER" as const, content })),
    });
    await prisma().conversation.update({ where: { id: conversationId }, data: { messageCount: row.messageCount + contents.length } });
  };
  const logOf = async (conversationId: string) => (await readLog(prisma(), conversationId)).map((m) => [Number(m.seq), m.content]);
  const lineageLength = async (conversationId: string) =>
    ((await prisma().conversation.findUniqueOrThrow({ where: { id: conversationId }, select: { lineage: true } })).lineage as unknown[]).length;

  it(`refuses a fork of a conversation already ${MAX_FORK_DEPTH} forks deep with a ForkDepthLimitError, creating nothing`, async () => {
    const root = await startConversation(t.client, "Deep");
    const rootId = decodeGlobalId(root.id)!.id;
    await append(rootId, ["the first question"]);
    // A chain of forks, each of the one before at that one's own newest message: every level shares one.
    let deepest = root.id;
    let at = encodeGlobalId("Message", (await rowsOf(rootId))[0]!.id);
    for (let depth = 1; depth <= MAX_FORK_DEPTH; depth++) {
      deepest = expectType(await fork(deepest, at), "ForkConversationSuccess").conversation.id;
      if (depth === MAX_FORK_DEPTH) break;
      const id = decodeGlobalId(deepest)!.id;
      await append(id, [`message ${depth + 1}`]);
      at = encodeGlobalId("Message", (await rowsOf(id))[0]!.id);
    }
    const deepLog = expectType((await t.client.request(ConversationDocument, { id: deepest, first: 40 })).node!, "Conversation");
    expect(deepLog.messages.edges.map((e) => e.node.content)).toEqual([
      "the first question",
      ...Array.from({ length: MAX_FORK_DEPTH - 1 }, (_, i) => `message ${i + 2}`),
    ]);
    expect(await lineageLength(decodeGlobalId(deepest)!.id)).toBe(MAX_FORK_DEPTH);

    const conversations = await prisma().conversation.count();
    // Concurrent forks of the deepest one: each is refused, as its depth was fixed when it was made.
    const refused = await Promise.all(Array.from({ length: 4 }, () => fork(deepest, at)));
    for (const payload of refused) expect(expectType(payload, "ForkDepthLimitError").maxForkDepth).toBe(MAX_FORK_DEPTH);
    expect(await prisma().conversation.count()).toBe(conversations);
    // One level up still forks: the bound is on depth, not on how many forks a conversation has.
    const [parentOfDeepest] = await prisma().conversation.findMany({ where: { id: decodeGlobalId(deepest)!.id }, select: { forkedFromConversationId: true } });
    expectType(await fork(encodeGlobalId("Conversation", parentOfDeepest!.forkedFromConversationId!), at), "ForkConversationSuccess");
    // And the deepest forks at its first message: the levels in between share nothing of that prefix.
    const first = encodeGlobalId("Message", (await rowsOf(rootId))[0]!.id);
    const shallow = expectType(await fork(deepest, first), "ForkConversationSuccess").conversation;
    expect(await lineageLength(decodeGlobalId(shallow.id)!.id)).toBe(2);
    expect(await logOf(decodeGlobalId(shallow.id)!.id)).toEqual([[1, "the first question"]]);
  });

  it("regenerates the same answer 40 times, each in the newest branch, without deepening the lineage", async () => {
    const seeded = ["question 1", "answer 1", "question 2", "answer 2"];
    const root = await startConversation(t.client, "Regenerated");
    const rootId = decodeGlobalId(root.id)!.id;
    await append(rootId, seeded);
    const question = encodeGlobalId("Message", (await rowsOf(rootId))[2]!.id);
    let newest = root.id;
    for (let round = 1; round <= 40; round++) {
      newest = expectType(await fork(newest, question), "ForkConversationSuccess").conversation.id;
      const id = decodeGlobalId(newest)!.id;
      await append(id, [`answer 2, take ${round}`]);
      expect(await lineageLength(id)).toBeLessThanOrEqual(2);
      // The same log as a conversation that was never forked with those four messages.
      const unforked = decodeGlobalId((await startConversation(t.client, `Unforked ${round}`)).id)!.id;
      await append(unforked, [...seeded.slice(0, 3), `answer 2, take ${round}`]);
      expect(await logOf(id)).toEqual(await logOf(unforked));
    }
    const page = expectType((await t.client.request(ConversationDocument, { id: newest, first: 10 })).node!, "Conversation");
    expect(page.forkedFrom?.message).toEqual({ id: question, seq: "3" });
  });

  it("reads every log of a tree of forks made at shared and own messages as the messages it was made of", async () => {
    // Each conversation's log as a list of [seq, content]: its parent's up to the fork point, then its own.
    const expected = new Map<string, [number, string][]>();
    const root = decodeGlobalId((await startConversation(t.client, "Tree")).id)!.id;
    await append(root, ["r1", "r2", "r3", "r4", "r5", "r6"]);
    expected.set(
      root,
      ["r1", "r2", "r3", "r4", "r5", "r6"].map((c, i) => [i + 1, c]),
    );
    let state = 7;
    const next = (n: number) => (state = (state * 1103515245 + 12345) % 2147483648) % n;
    const ids = [root];
    for (let made = 0; made < 36; made++) {
      const parent = ids[ids.length - 1 - next(Math.min(ids.length, 4))]!;
      const parentLog = expected.get(parent)!;
      const seq = 1 + next(parentLog.length);
      const log = await readLog(prisma(), parent);
      const forked = expectType(await fork(encodeGlobalId("Conversation", parent), encodeGlobalId("Message", log[seq - 1]!.id)), "ForkConversationSuccess");
      const id = decodeGlobalId(forked.conversation.id)!.id;
      const own = Array.from({ length: 1 + next(2) }, (_, i) => `f${made}.${i}`);
      await append(id, own);
      expected.set(id, [...parentLog.slice(0, seq), ...own.map((c, i) => [seq + i + 1, c] as [number, string])]);
      ids.push(id);
    }
    for (const id of ids) expect(await logOf(id)).toEqual(expected.get(id));
  });
});
