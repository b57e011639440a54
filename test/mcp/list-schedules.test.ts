// The MCP server for workspaces lists a workspace's schedules: list_schedules, as the owner only.
import { afterEach, describe, expect, it } from "vitest";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CreateScheduleDocument } from "../../sdk/generated/graphql.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { connectMcp } from "../support/mcp-process.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe("list_schedules", () => {
  let t: TestApp | undefined;
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await t?.close();
  });

  it("lists the schedules of a workspace of the key's principal", async () => {
    t = await startTestApp("pglite", { listen: true, authRequired: true });
    const aliceKey = await t.createPrincipal("alice");
    const workspace = await createWorkspace(t.as(aliceKey));
    const input = { workspaceId: workspace.id, question: "What changed?", cron: "0 8 * * 1", timezone: "Europe/Berlin" };
    const created = expectType((await t.as(aliceKey).request(CreateScheduleDocument, { input })).createSchedule, "CreateScheduleSuccess");
    const alice = await connectMcp({ DOSSIER_URL: t.server!.url, DOSSIER_API_KEY: aliceKey });
    const bob = await connectMcp({ DOSSIER_URL: t.server!.url, DOSSIER_API_KEY: await t.createPrincipal("bob") });
    clients.push(alice.client, bob.client);
    const listed = JSON.parse(await alice.text("list_schedules", { workspaceId: workspace.id }));
    expect(listed.schedules).toEqual([
      expect.objectContaining({
        id: created.schedule.id,
        cron: "0 8 * * 1",
        timezone: "Europe/Berlin",
        paused: false,
        nextFireAt: created.schedule.nextFireAt,
      }),
    ]);
    expect((await bob.call("list_schedules", { workspaceId: workspace.id })).isError).toBe(true);
  });
});
