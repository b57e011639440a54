// W4, W5, R0: run admission freezes its inputs and is idempotent per principal and key.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AdmitRunDocument,
  type AdmitRunInput,
  ArchiveWorkspaceDocument,
  ConversationDocument,
  RestoreWorkspaceDocument,
  RunDocument,
  UpdateGoalDocument,
} from "../../sdk/generated/graphql.js";
import { AdmissionService } from "../../src/domain/runs/admission-service.js";
import { busRunAnnouncer } from "../../src/runtime/adapters/bus-run-announcer.js";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish, startConversation } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("run admission on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend, { agents: [{ name: "analyst", systemPrompt: "You compare figures." }] });
  });
  afterAll(async () => t?.close());

  const runCount = () => t.app.db.prisma.run.count();

  it("freezes the goal version: editing the goal changes nothing for an admitted run", async () => {
    const workspace = await createWorkspace(t.client, "goal v1");
    const first = await admit(t.client, { workspaceId: workspace.id, question: "What changed in Q3?" });
    expect(first.run).toMatchObject({ status: "QUEUED", frozenGoal: { version: 1, statement: "goal v1" }, workspace: { id: workspace.id } });
    expect(first.replayed).toBe(false);

    const updated = await t.client.request(UpdateGoalDocument, {
      input: { workspaceId: workspace.id, statement: "goal v2", expectedVersion: 1 },
    });
    expectType(updated.updateGoal, "UpdateGoalSuccess");
    const second = await admit(t.client, { workspaceId: workspace.id, question: "And in Q4?" });
    expect(second.run.frozenGoal).toEqual({ version: 2, statement: "goal v2" });
    expect(second.run.id).not.toBe(first.run.id);

    const reread = await t.client.request(RunDocument, { id: first.run.id });
    const firstRun = expectType(reread.node!, "Run");
    expect(firstRun.frozenGoal).toEqual({ version: 1, statement: "goal v1" });
    expect(firstRun.goalVersion?.version).toBe(1);
  });

  it("freezes exact material versions, and a later version of the material changes nothing", async () => {
    const v1 = await publish(t.client, { title: "Cell makers 2026", content: "CATL: 40 GWh" });
    const publicationId = v1.version.publication.id;
    const admitted = await admit(t.client, { question: "q", materials: [{ publicationId, version: 1 }] });
    await publish(t.client, { publicationId, content: "CATL: 55 GWh" });
    const run = expectType((await t.client.request(RunDocument, { id: admitted.run.id })).node!, "Run");
    expect(run.materials.map((m) => [m.publicationVersion.publication.id, m.publicationVersion.version])).toEqual([[publicationId, 1]]);
    expect(run.materials[0]?.publicationVersion.contentHash).toBe(v1.version.contentHash);
  });

  it("applies default limits, records them on the run and counts the deadline from admission", async () => {
    const { run } = await admit(t.client, { question: "defaults" });
    expect(run.limits).toEqual({ maxTurns: 20, tokenBudget: 200_000, deadlineSeconds: 1_800, maxCost: null, confirmCostAbove: null });
    expect(Date.parse(run.deadlineAt) - Date.parse(run.createdAt)).toBe(1_800_000);
    expect(run.agent).toBe("researcher");
    const custom = await admit(t.client, { question: "custom", agent: "analyst", limits: { maxTurns: 3 } });
    expect(custom.run.limits).toEqual({ maxTurns: 3, tokenBudget: 200_000, deadlineSeconds: 1_800, maxCost: null, confirmCostAbove: null });
    expect(custom.run.agent).toBe("analyst");
  });

  it("admits a plain run outside any workspace into a new conversation; its question enters the log when it starts", async () => {
    const { run } = await admit(t.client, { question: "Who makes LFP cells?" });
    expect(run).toMatchObject({ workspace: null, frozenGoal: null, question: "Who makes LFP cells?", status: "QUEUED" });
    // No worker runs in this app: the run is queued and the log is still empty.
    const conversation = expectType((await t.client.request(ConversationDocument, { id: run.conversation.id })).node!, "Conversation");
    expect(conversation.messages.edges).toEqual([]);
    expect(conversation.runs.edges.map((e) => e.node.id)).toEqual([run.id]);
  });

  it("continues a conversation: a follow-up is refused while a run is active, or queued behind it when asked", async () => {
    const conversation = await startConversation(t.client, "Battery chat");
    const first = await admit(t.client, { conversationId: conversation.id, question: "round one" });
    const before = await runCount();
    const refused = await t.client.request(AdmitRunDocument, {
      input: { conversationId: conversation.id, question: "round two", idempotencyKey: "round-two" },
    });
    const busy = expectType(refused.admitRun, "ConversationBusyError");
    expect(busy.activeRun).toEqual({ id: first.run.id, status: "QUEUED" });
    expect(await runCount()).toBe(before);
    // Nothing was written, the key included: the same key is free for the next try.
    const second = await admit(t.client, { conversationId: conversation.id, question: "round two", multitask: "ENQUEUE", idempotencyKey: "round-two" });
    expect(second.replayed).toBe(false);
    expect(first.run.conversation.id).toBe(conversation.id);
    expect(second.run.conversation.id).toBe(conversation.id);
    const log = expectType((await t.client.request(ConversationDocument, { id: conversation.id })).node!, "Conversation");
    expect(log.runs.edges.map((e) => e.node.id).sort()).toEqual([first.run.id, second.run.id].sort());
    // A replay returns the run admitted first, whatever strategy it names.
    const replay = await admit(t.client, { conversationId: conversation.id, question: "round two", multitask: "REJECT", idempotencyKey: "round-two" });
    expect(replay).toMatchObject({ replayed: true, run: { id: second.run.id } });
  });

  it("replays the same key and request, comparing materials as a set and limits after defaults", async () => {
    const a = await publish(t.client, { title: "A", content: "a" });
    const b = await publish(t.client, { title: "B", content: "b" });
    const ma = { publicationId: a.version.publication.id, version: 1 };
    const mb = { publicationId: b.version.publication.id, version: 1 };
    const workspace = await createWorkspace(t.client);
    const first = await admit(t.client, {
      workspaceId: workspace.id,
      question: "q",
      materials: [ma, mb],
      idempotencyKey: "key-set",
    });
    const before = await runCount();
    const again = await admit(t.client, {
      workspaceId: workspace.id,
      question: "q",
      materials: [mb, ma, mb],
      limits: { maxTurns: 20, tokenBudget: 200_000 },
      idempotencyKey: "key-set",
    });
    expect(again).toMatchObject({ replayed: true, run: { id: first.run.id } });
    expect(await runCount()).toBe(before);
  });

  type Vary = (material: { publicationId: string; version: number }, otherWorkspaceId: string) => AdmitRunInput;
  it.each<[string, Vary]>([
    ["materials", (m) => ({ materials: [m], question: "q" })],
    ["question", () => ({ question: "another question" })],
    ["limits", () => ({ question: "q", limits: { maxTurns: 5 } })],
    ["workspace", (_m, otherWorkspaceId) => ({ question: "q", workspaceId: otherWorkspaceId })],
  ])("answers the same key with different %s with IdempotencyConflictError, admitting nothing", async (_what, vary) => {
    const material = await publish(t.client, { title: "M", content: "m" });
    const m = { publicationId: material.version.publication.id, version: 1 };
    const other = await createWorkspace(t.client);
    const key = `key-${Math.random()}`;
    await admit(t.client, { question: "q", idempotencyKey: key });
    const before = await runCount();
    const result = await t.client.request(AdmitRunDocument, {
      input: { idempotencyKey: key, ...vary(m, other.id) },
    });
    expect(result.admitRun).toMatchObject({ __typename: "IdempotencyConflictError", idempotencyKey: key });
    expect(await runCount()).toBe(before);
  });

  it("admits exactly one run for twenty concurrent admissions with one key", async () => {
    const workspace = await createWorkspace(t.client);
    const before = await runCount();
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        t.client.request(AdmitRunDocument, {
          input: { workspaceId: workspace.id, question: "concurrent", idempotencyKey: "key-concurrent" },
        }),
      ),
    );
    const successes = results.map((r) => expectType(r.admitRun, "AdmitRunSuccess"));
    expect(new Set(successes.map((s) => s.run.id)).size).toBe(1);
    expect(successes.filter((s) => !s.replayed)).toHaveLength(1);
    expect(await runCount()).toBe(before + 1);
  });

  it("scopes keys to the principal: another principal's same key admits its own run", async () => {
    const other = t.as(await t.createPrincipal("Other"));
    const mine = await admit(t.client, { question: "q", idempotencyKey: "shared-key" });
    const theirs = await admit(other, { question: "q", idempotencyKey: "shared-key" });
    expect(theirs.replayed).toBe(false);
    expect(theirs.run.id).not.toBe(mine.run.id);
  });

  it("keeps keys for 24 hours, then lets them be used afresh", async () => {
    const actor = { principalId: "development" };
    let now = new Date("2030-01-01T00:00:00Z");
    const service = new AdmissionService({
      prisma: t.app.db.prisma,
      events: t.app.events,
      announcer: busRunAnnouncer(t.app.events),
      profiles: t.app.services.agentProfiles,
      now: () => now,
    });
    const first = await service.admitRun(actor, { question: "aging", idempotencyKey: "key-aging" });
    now = new Date(now.getTime() + 23 * 3600 * 1000);
    expect(await service.admitRun(actor, { question: "aging", idempotencyKey: "key-aging" })).toMatchObject({
      replayed: true,
      run: { id: first.run.id },
    });
    now = new Date(now.getTime() + 2 * 3600 * 1000);
    const fresh = await service.admitRun(actor, { question: "other request", idempotencyKey: "key-aging" });
    expect(fresh.replayed).toBe(false);
    expect(fresh.run.id).not.toBe(first.run.id);
  });

  it("refuses admission into an archived workspace, cancels nothing, and admits again once restored", async () => {
    const workspace = await createWorkspace(t.client);
    const queued = await admit(t.client, { workspaceId: workspace.id, question: "before archive" });
    await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    const before = await runCount();
    const refused = await t.client.request(AdmitRunDocument, { input: { workspaceId: workspace.id, question: "during" } });
    expect(refused.admitRun.__typename).toBe("WorkspaceArchivedError");
    expect(await runCount()).toBe(before);
    const still = expectType((await t.client.request(RunDocument, { id: queued.run.id })).node!, "Run");
    expect(still.status).toBe("QUEUED");
    await t.client.request(RestoreWorkspaceDocument, { input: { workspaceId: workspace.id } });
    expect((await admit(t.client, { workspaceId: workspace.id, question: "after" })).run.status).toBe("QUEUED");
  });

  it("refuses materials and conversations that do not exist as NotFoundError, admitting nothing", async () => {
    const material = await publish(t.client, { title: "Real", content: "x" });
    const before = await runCount();
    const missingVersion = await t.client.request(AdmitRunDocument, {
      input: { question: "q", materials: [{ publicationId: material.version.publication.id, version: 99 }] },
    });
    expect(missingVersion.admitRun.__typename).toBe("NotFoundError");
    const missingConversation = await t.client.request(AdmitRunDocument, {
      input: { question: "q", conversationId: encodeGlobalId("Conversation", "nope") },
    });
    expect(missingConversation.admitRun.__typename).toBe("NotFoundError");
    expect(await runCount()).toBe(before);
  });

  it.each([
    ["an empty question", { question: "  " }, "question"],
    ["zero turns", { question: "q", limits: { maxTurns: 0 } }, "limits.maxTurns"],
    ["a malformed agent name", { question: "q", agent: "Robert'); DROP" }, "agent"],
    ["an agent profile that is not configured", { question: "q", agent: "poet" }, "agent"],
    ["a malformed material id", { question: "q", materials: [{ publicationId: "xyz", version: 1 }] }, "materials.0.publicationId"],
  ])("rejects %s as ValidationError, admitting nothing", async (_name, input, field) => {
    const before = await runCount();
    const result = await t.client.request(AdmitRunDocument, { input });
    const error = expectType(result.admitRun, "ValidationError");
    expect(error.issues.map((i) => i.field)).toContain(field);
    expect(await runCount()).toBe(before);
  });
});
