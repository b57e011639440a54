// MAX_SCHEDULES_PER_PRINCIPAL: a principal with that many schedules (paused ones included) is
// refused one more with a ScheduleLimitError naming the bound, and nothing of it is written;
// another principal is not affected; deleting one frees a place. Creates side by side at the bound
// create exactly as many schedules as fit.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { CreateScheduleDocument, DeleteScheduleDocument, PauseScheduleDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import { backends } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const LIMIT = 3;

describe.each(backends)("the schedule limit on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend, { maxSchedulesPerPrincipal: LIMIT });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function create(client: DossierClient, workspaceId: string) {
    return (await client.request(CreateScheduleDocument, { input: { workspaceId, question: "weekly digest", cron: "0 8 * * 1" } })).createSchedule;
  }
  const newWorkspace = async (client: DossierClient) => ({ workspaceId: (await createWorkspace(client)).id });
  const schedulesIn = (workspaceIds: string[]) =>
    t.app.db.prisma.schedule.count({ where: { workspaceId: { in: workspaceIds.map((id) => idOfType(id, "Workspace")!) } } });

  it("refuses one schedule more than the bound with a ScheduleLimitError, paused ones counted; deleting one frees a place", async () => {
    const { workspaceId } = await newWorkspace(t.client);
    const created = [];
    for (let i = 0; i < LIMIT; i++) created.push(expectType(await create(t.client, workspaceId), "CreateScheduleSuccess").schedule);
    expectType((await t.client.request(PauseScheduleDocument, { input: { id: created[0]!.id } })).pauseSchedule, "PauseScheduleSuccess");
    const refused = expectType(await create(t.client, workspaceId), "ScheduleLimitError");
    expect(refused.maxSchedules).toBe(LIMIT);
    expect(refused.message).toMatch(/already have 3 schedules/);
    // Nothing of it was written: neither a schedule nor its conversation.
    expect(await schedulesIn([workspaceId])).toBe(LIMIT);
    const { ownerId } = await t.app.db.prisma.schedule.findFirstOrThrow({ where: { workspaceId: idOfType(workspaceId, "Workspace")! } });
    expect(await t.app.db.prisma.conversation.count({ where: { ownerId, title: "weekly digest" } })).toBe(LIMIT);

    // Another principal is not affected.
    const other = t.as(await t.createPrincipal(`other-${backend}`));
    expectType(await create(other, (await newWorkspace(other)).workspaceId), "CreateScheduleSuccess");

    expectType((await t.client.request(DeleteScheduleDocument, { input: { id: created[1]!.id } })).deleteSchedule, "DeleteScheduleSuccess");
    expectType(await create(t.client, workspaceId), "CreateScheduleSuccess");
    expectType(await create(t.client, workspaceId), "ScheduleLimitError");
  });

  it("creates side by side at the bound create exactly as many schedules as fit", async () => {
    const client = t.as(await t.createPrincipal(`burst-${backend}`));
    const workspaces = await Promise.all(Array.from({ length: 4 }, () => newWorkspace(client)));
    const payloads = await Promise.all(Array.from({ length: 12 }, (_, i) => create(client, workspaces[i % 4]!.workspaceId)));
    const kinds = payloads.map((p) => p.__typename);
    expect(kinds.filter((k) => k === "CreateScheduleSuccess")).toHaveLength(LIMIT);
    expect(kinds.filter((k) => k === "ScheduleLimitError")).toHaveLength(12 - LIMIT);
    expect(await schedulesIn(workspaces.map((w) => w.workspaceId))).toBe(LIMIT);
  });
});
