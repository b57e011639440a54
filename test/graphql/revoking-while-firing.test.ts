// Revoking a key while a fire holds one of its schedules: the revocation answers at once and the
// key is refused from then on, whatever holds the schedule; the schedule pauses once the fire
// committed. And a triggered fire that waited for a schedule the revocation was pausing sees the
// revocation: it admits nothing (recorded FAILED), though its locking statement began before it.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/open-database.js";
import { idOfType } from "../../src/domain/global-id.js";
import { KEY_REVOKED_FIRE_REASON, KEY_REVOKED_REASON } from "../../src/domain/schedules/revoked-keys.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { rawRequest } from "../support/raw-request.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const KEY = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { ... on CreateApiKeySuccess { secret apiKey { id } } } }`;
const REVOKE = `mutation($id: ID!) { revokeApiKey(input: { id: $id }) { __typename } }`;
const CREATE = `mutation($input: CreateScheduleInput!) { createSchedule(input: $input) { ... on CreateScheduleSuccess { schedule { id } } } }`;
const TRIGGER = `mutation($id: ID!) { triggerSchedule(input: { id: $id }) { ... on TriggerScheduleSuccess { fire { status reason run { id } } } } }`;
const WORKSPACE = `mutation { createWorkspace(input: { title: "W", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`;

describe.runIf(backends.includes("postgres"))("revoking a key while a fire holds its schedule", () => {
  let t: TestApp | undefined;
  let drop = async () => undefined as unknown;
  /** One session holds a schedule, as a fire in progress does; another watches who waits. */
  const holder = { sql: undefined as pg.Client | undefined, watcher: undefined as pg.Client | undefined };
  beforeAll(async () => {
    const created = await createMigratedPostgresDatabase();
    drop = created.drop;
    holder.sql = new pg.Client({ connectionString: created.url });
    holder.watcher = new pg.Client({ connectionString: created.url });
    await Promise.all([holder.sql.connect(), holder.watcher.connect()]);
    t = await startTestApp("postgres", {
      authRequired: true,
      database: async () => {
        const db = await openDatabase({ kind: "postgres", url: created.url });
        return { db, dispose: () => db.close() };
      },
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await Promise.all([holder.sql?.end(), holder.watcher?.end()]);
    await drop();
  });
  const gql = async (bearer: string, query: string, variables: Record<string, unknown> = {}) => {
    const answer = await rawRequest(t!.app, bearer, query, variables);
    expect(answer.errors, query).toBeUndefined();
    return answer.data!;
  };
  const prisma = () => t!.app.db.prisma;
  const sql = () => holder.sql!;

  /** A principal, a second key of it, a workspace and a schedule made with the second key. */
  async function owner(name: string) {
    const key = await t!.createPrincipal(name);
    const created = (await gql(key, KEY, { input: { name: "second" } })).createApiKey;
    const w = (await gql(key, WORKSPACE)).createWorkspace.workspace.id as string;
    const input = { workspaceId: w, question: "weekly", intervalSeconds: 3600, catchUp: "ALL" };
    const schedule = (await gql(created.secret, CREATE, { input })).createSchedule.schedule.id as string;
    return { key, second: created.secret as string, secondId: created.apiKey.id as string, schedule: idOfType(schedule, "Schedule")!, globalId: schedule };
  }
  const scheduleState = (id: string) => prisma().schedule.findUniqueOrThrow({ where: { id }, select: { paused: true, pausedReason: true } });
  const hold = async (id: string) => {
    await sql().query("BEGIN");
    await sql().query("SELECT id FROM schedule WHERE id = $1 FOR UPDATE", [id]);
  };

  it("answers at once and refuses the key at once; the schedule pauses once the fire holding it committed", async () => {
    const { key, second, secondId, schedule } = await owner("held-revocation");
    await hold(schedule);
    try {
      const answered = rawRequest(t!.app, key, REVOKE, { id: secondId }).then((answer) => answer.data?.revokeApiKey.__typename as string);
      const waited = new Promise<string>((resolve) => setTimeout(() => resolve("still waiting"), 5_000));
      expect(await Promise.race([answered, waited])).toBe("RevokeApiKeySuccess");
      expect(await t!.app.services.principals.authenticate(second)).toBeNull();
      expect(await scheduleState(schedule)).toEqual({ paused: false, pausedReason: null });
    } finally {
      await sql().query("COMMIT");
    }
    await waitUntil(async () => (await scheduleState(schedule)).paused || undefined, 10_000, 20);
    expect(await scheduleState(schedule)).toEqual({ paused: true, pausedReason: KEY_REVOKED_REASON });
  });

  it("a triggered fire that waited for the schedule while its key was revoked and it was paused admits nothing", async () => {
    const { key, secondId, schedule, globalId } = await owner("held-trigger");
    await hold(schedule);
    let triggered: Promise<unknown> | undefined;
    try {
      triggered = gql(key, TRIGGER, { id: globalId });
      const waiting = async () =>
        (
          await holder.watcher!.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'",
          )
        ).rows[0]!.n > 0 || undefined;
      await waitUntil(waiting, 10_000, 10);
      // The revocation commits while the fire waits; the session holding the schedule pauses it, as the revocation's pausing does.
      await prisma().apiKey.update({ where: { id: idOfType(secondId, "ApiKey")! }, data: { revokedAt: new Date() } });
      await sql().query("UPDATE schedule SET paused = true, paused_reason = $2 WHERE id = $1", [schedule, KEY_REVOKED_REASON]);
    } finally {
      await sql().query("COMMIT");
    }
    expect(((await triggered) as { triggerSchedule: unknown }).triggerSchedule).toEqual({
      fire: { status: "FAILED", reason: KEY_REVOKED_FIRE_REASON, run: null },
    });
    expect(await prisma().run.count({ where: { scheduleId: schedule } })).toBe(0);
  });
});
