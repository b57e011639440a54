// Attack: a leaked API key creates schedules that would keep admitting (and spending) after the
// operator revoked the key. Revoking a key pauses the schedules it created, last updated or resumed
// at once (their owner's webhooks hear SCHEDULE_PAUSED), and a fire — its timer or triggerSchedule —
// of a schedule whose key was revoked admits nothing and pauses it (a schedule saved while its key
// was being revoked). Another valid key of the owner resumes it, and it fires again; a schedule
// made without a key (a sign-in) is tied to none and keeps firing whatever key is revoked.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeGlobalId, idOfType } from "../../src/domain/global-id.js";
import { backends } from "../support/databases.js";
import { rawRequest } from "../support/raw-request.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const KEY_REVOKED_REASON = "the API key that created, last updated or resumed it was revoked";
const KEY_REVOKED_FIRE_REASON = "the API key that created, last updated or resumed the schedule was revoked: resume or update it with a valid credential";

const KEY = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { ... on CreateApiKeySuccess { secret apiKey { id } } } }`;
const REVOKE = `mutation($id: ID!) { revokeApiKey(input: { id: $id }) { __typename } }`;
const CREATE = `mutation($input: CreateScheduleInput!) { createSchedule(input: $input) { __typename ... on CreateScheduleSuccess { schedule { id } } } }`;
const UPDATE = `mutation($input: UpdateScheduleInput!) { updateSchedule(input: $input) { __typename ... on UpdateScheduleSuccess { schedule { paused } } } }`;
const TRIGGER = `mutation($id: ID!) { triggerSchedule(input: { id: $id }) {
  __typename ... on TriggerScheduleSuccess { fire { status reason run { id } } schedule { paused pausedReason } } } }`;
const RESUME = `mutation($id: ID!) { resumeSchedule(input: { id: $id }) { __typename ... on ResumeScheduleSuccess { schedule { paused } } } }`;
const STATE = `query($id: ID!) { node(id: $id) { ... on Schedule { paused pausedReason fires { totalCount } } } }`;
const WORKSPACE = `mutation { createWorkspace(input: { title: "W", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`;
const WEBHOOK = `mutation { createWebhook(input: { url: "https://hooks.example.com/dossier", events: [SCHEDULE_PAUSED] }) {
  ... on CreateWebhookSuccess { webhook { id } } } }`;

describe.each(backends)("a revoked key's schedules on %s", (backend) => {
  let t: TestApp | undefined;
  // One server without a scheduler of its own: the tests fire due schedules themselves.
  beforeAll(async () => {
    t = await startTestApp(backend, { authRequired: true });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });
  const gql = async (bearer: string, query: string, variables: Record<string, unknown> = {}) => {
    const answer = await rawRequest(t!.app, bearer, query, variables);
    expect(answer.errors, query).toBeUndefined();
    return answer.data!;
  };
  const prisma = () => t!.app.db.prisma;
  const internal = (id: string) => idOfType(id, "Schedule")!;

  /** A principal with a second full key, a workspace and a webhook hearing SCHEDULE_PAUSED. */
  async function owner(name: string) {
    const key = await t!.createPrincipal(name);
    const created = (await gql(key, KEY, { input: { name: "second" } })).createApiKey;
    const w = (await gql(key, WORKSPACE)).createWorkspace.workspace.id as string;
    const webhookId = idOfType((await gql(key, WEBHOOK)).createWebhook.webhook.id, "Webhook")!;
    const schedule = async (by: string) =>
      (await gql(by, CREATE, { input: { workspaceId: w, question: "weekly", intervalSeconds: 3600, catchUp: "ALL" } })).createSchedule.schedule.id as string;
    return { key, second: created.secret as string, secondId: created.apiKey.id as string, w, webhookId, schedule };
  }
  const state = async (key: string, id: string) =>
    (await gql(key, STATE, { id })).node as { paused: boolean; pausedReason: string | null; fires: { totalCount: number } };
  const runs = (id: string) => prisma().run.count({ where: { scheduleId: internal(id) } });
  /** Due now: its first fire (at its creation) is due. */
  async function makeDue(id: string) {
    const where = { id: internal(id) };
    const { createdAt } = await prisma().schedule.findUniqueOrThrow({ where, select: { createdAt: true } });
    await prisma().schedule.update({ where, data: { nextFireAt: createdAt } });
  }
  /** The SCHEDULE_PAUSED events the webhook heard: the schedule and summary of each. */
  async function pausedEvents(webhookId: string) {
    const messages = await prisma().webhookMessage.findMany({ where: { webhookId, type: "SCHEDULE_PAUSED" }, orderBy: { createdAt: "asc" } });
    return messages.map((message) => {
      const { data } = JSON.parse(message.body) as { data: { scheduleId: string; summary: string } };
      return [data.scheduleId, data.summary];
    });
  }

  it("revoking a key pauses its schedules at once and tells the owner's webhooks; the other key's schedule keeps firing", async () => {
    const { key, second, secondId, webhookId, schedule } = await owner(`revoked-${backend}`);
    const leaked = await schedule(second);
    const kept = await schedule(key);
    expect((await gql(key, REVOKE, { id: secondId })).revokeApiKey.__typename).toBe("RevokeApiKeySuccess");

    expect(await state(key, leaked)).toEqual({ paused: true, pausedReason: KEY_REVOKED_REASON, fires: { totalCount: 0 } });
    expect((await state(key, kept)).paused).toBe(false);
    expect(await pausedEvents(webhookId)).toEqual([[leaked, KEY_REVOKED_REASON]]);

    await makeDue(leaked);
    await makeDue(kept);
    await t!.app.services.schedules.fireDue();
    expect([await runs(leaked), await runs(kept)]).toEqual([0, 1]);
    // Revoking it again changes nothing.
    await gql(key, REVOKE, { id: secondId });
    expect(await pausedEvents(webhookId)).toHaveLength(1);
  });

  it("a fire of a schedule whose key was revoked admits nothing and pauses it; another key resumes it and it fires again", async () => {
    const { key, second, secondId, webhookId, schedule } = await owner(`raced-${backend}`);
    const timed = await schedule(second);
    const triggered = await schedule(second);
    // Saved while the key was being revoked: the revocation paused none of them.
    await prisma().apiKey.update({ where: { id: idOfType(secondId, "ApiKey")! }, data: { revokedAt: new Date() } });
    expect((await state(key, timed)).paused).toBe(false);

    // Its timer: the due fire admits no run, records no fire, and the schedule pauses itself.
    await makeDue(timed);
    expect(await t!.app.services.schedules.fireDue()).toBe(0);
    expect(await runs(timed)).toBe(0);
    expect(await state(key, timed)).toEqual({ paused: true, pausedReason: KEY_REVOKED_REASON, fires: { totalCount: 0 } });
    expect(await t!.app.services.schedules.fireDue()).toBe(0);

    // triggerSchedule by the owner's valid key: the fire is recorded FAILED, the schedule paused.
    const refused = { __typename: "TriggerScheduleSuccess", fire: { status: "FAILED", reason: KEY_REVOKED_FIRE_REASON, run: null } };
    const paused = { paused: true, pausedReason: KEY_REVOKED_REASON };
    expect((await gql(key, TRIGGER, { id: triggered })).triggerSchedule).toEqual({ ...refused, schedule: paused });
    expect((await gql(key, TRIGGER, { id: timed })).triggerSchedule).toEqual({ ...refused, schedule: paused });
    expect([await runs(timed), await runs(triggered)]).toEqual([0, 0]);
    // One event per schedule pausing, none for a fire of one already paused.
    expect(await pausedEvents(webhookId)).toEqual([
      [timed, KEY_REVOKED_REASON],
      [triggered, KEY_REVOKED_REASON],
    ]);

    // Resumed by the valid key, it follows that key and fires again.
    expect((await gql(key, RESUME, { id: timed })).resumeSchedule).toEqual({ __typename: "ResumeScheduleSuccess", schedule: { paused: false } });
    await makeDue(timed);
    expect(await t!.app.services.schedules.fireDue()).toBe(1);
    expect(await runs(timed)).toBe(1);
    // Updated by it, a paused one follows it too (and stays paused until resumed): triggered, it admits.
    expect((await gql(key, UPDATE, { input: { id: triggered, question: "monthly" } })).updateSchedule.schedule).toEqual({ paused: true });
    expect((await gql(key, TRIGGER, { id: triggered })).triggerSchedule.fire.status).toBe("ADMITTED");
    expect(await pausedEvents(webhookId)).toHaveLength(2);
  });

  it("a schedule made without an API key (a sign-in) keeps firing whatever key of its owner is revoked", async () => {
    const { key, secondId, w, webhookId } = await owner(`signed-in-${backend}`);
    const { principalId } = (await t!.app.services.principals.authenticate(key))!;
    const signedIn = { principalId, credentialId: `sign-in:${principalId}` };
    const input = { workspaceId: idOfType(w, "Workspace")!, question: "weekly", intervalSeconds: 3600, catchUp: "ALL" as const };
    const made = await t!.app.services.schedules.create(signedIn, input);
    expect(made.apiKeyId).toBeNull();
    const id = encodeGlobalId("Schedule", made.id);
    await gql(key, REVOKE, { id: secondId });
    // The key in use revoked too: checked through the database from here on.
    await t!.app.services.principals.revokeApiKeyByPrefix(key);
    await makeDue(id);
    expect(await t!.app.services.schedules.fireDue()).toBe(1);
    expect(await runs(id)).toBe(1);
    expect(await prisma().schedule.findUniqueOrThrow({ where: { id: made.id }, select: { paused: true } })).toEqual({ paused: false });
    expect(await pausedEvents(webhookId)).toEqual([]);
  });
});
