// A principal's bounded settings hold their bound however many writes arrive together: at most 20
// MCP servers, 100 stored skills per agent, 20 webhooks and 200 score configs. Each write counts the principal's rows
// and inserts under a lock on the principal's row (domain/principal/principal-lock.ts); without it
// writes side by side on PostgreSQL each counted before the others' inserts and passed together.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MCP_SERVERS_PER_PRINCIPAL_MAX } from "../../src/domain/capabilities/mcp-server-service.js";
import { SKILLS_PER_AGENT_MAX } from "../../src/domain/capabilities/skill-service.js";
import type { Actor } from "../../src/domain/principal/principal-service.js";
import { SCORE_CONFIGS_PER_PRINCIPAL_MAX } from "../../src/domain/research/score-rules.js";
import { WEBHOOKS_PER_PRINCIPAL_MAX } from "../../src/domain/webhooks/webhook-service.js";
import { backends } from "../support/databases.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** How the writes ended: how many were written, how many refused (any other error is thrown). */
async function outcomes(writes: (() => Promise<unknown>)[]): Promise<{ written: number; refused: number }> {
  const settled = await Promise.allSettled(writes.map((write) => write()));
  const failed = settled.flatMap((s) => (s.status === "rejected" ? [s.reason as Error] : []));
  const other = failed.find((error) => !/at most \d+|may have at most/.test(error.message));
  if (other) throw other;
  return { written: settled.length - failed.length, refused: failed.length };
}

describe.each(backends)("per-principal bounds under writes side by side on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A new principal, as the services take it. */
  const principal = async (name: string): Promise<Actor> => {
    await t.createPrincipal(name);
    const { id } = await t.app.db.prisma.principal.findFirstOrThrow({ where: { name }, select: { id: true } });
    return { principalId: id } as Actor;
  };

  it("keeps exactly 20 of 60 MCP servers created together", async () => {
    const actor = await principal(`mcp-${backend}`);
    const upserts = Array.from(
      { length: 60 },
      (_, i) => () => t.app.services.mcpServers.upsert(actor, { name: `s${i}`, transport: "HTTP", url: "https://mcp.example.com", enabled: false }),
    );
    expect(await outcomes(upserts)).toEqual({ written: MCP_SERVERS_PER_PRINCIPAL_MAX, refused: 60 - MCP_SERVERS_PER_PRINCIPAL_MAX });
    expect(await t.app.db.prisma.mcpServer.count({ where: { ownerId: actor.principalId } })).toBe(MCP_SERVERS_PER_PRINCIPAL_MAX);
  });

  it("keeps exactly 10 of 40 skills stored together by an agent with 90", async () => {
    const actor = await principal(`skills-${backend}`);
    const stored = Array.from({ length: SKILLS_PER_AGENT_MAX - 10 }, (_, i) => ({
      ownerId: actor.principalId,
      agent: "researcher",
      name: `kept-${i}`,
      description: "d",
      body: "b",
    }));
    await t.app.db.prisma.skill.createMany({ data: stored });
    const upserts = Array.from({ length: 40 }, (_, i) => () => t.app.services.skills.upsert(actor, { name: `skill-${i}`, description: "d", body: "b" }));
    expect(await outcomes(upserts)).toEqual({ written: 10, refused: 30 });
    expect(await t.app.db.prisma.skill.count({ where: { ownerId: actor.principalId } })).toBe(SKILLS_PER_AGENT_MAX);
  });

  it("keeps exactly 20 of 60 webhooks created together", async () => {
    const actor = await principal(`hooks-${backend}`);
    const creates = Array.from(
      { length: 60 },
      (_, i) => () => t.app.services.webhooks.create(actor, { url: `https://hooks.example.com/in${i}`, events: ["WORKSPACE_ARCHIVED"] }),
    );
    expect(await outcomes(creates)).toEqual({ written: WEBHOOKS_PER_PRINCIPAL_MAX, refused: 60 - WEBHOOKS_PER_PRINCIPAL_MAX });
    expect(await t.app.db.prisma.webhook.count({ where: { ownerId: actor.principalId } })).toBe(WEBHOOKS_PER_PRINCIPAL_MAX);
  });

  it("keeps exactly 5 of 40 score configs created together by a principal with 195", async () => {
    const actor = await principal(`score-configs-${backend}`);
    const stored = Array.from({ length: SCORE_CONFIGS_PER_PRINCIPAL_MAX - 5 }, (_, i) => ({
      ownerId: actor.principalId,
      name: `kept-${i}`,
      kind: "NUMERIC" as const,
    }));
    await t.app.db.prisma.scoreConfig.createMany({ data: stored });
    const creates = Array.from({ length: 40 }, (_, i) => () => t.app.services.scores.createConfig(actor, { name: `config-${i}`, kind: "NUMERIC" }));
    expect(await outcomes(creates)).toEqual({ written: 5, refused: 35 });
    expect(await t.app.db.prisma.scoreConfig.count({ where: { ownerId: actor.principalId } })).toBe(SCORE_CONFIGS_PER_PRINCIPAL_MAX);
    // One of those names again: the config stored, as it is; a new name is refused.
    const [kept] = await t.app.db.prisma.scoreConfig.findMany({ where: { ownerId: actor.principalId, name: "kept-0" }, take: 1 });
    expect((await t.app.services.scores.createConfig(actor, { name: "kept-0", kind: "NUMERIC" })).id).toBe(kept!.id);
    await expect(t.app.services.scores.createConfig(actor, { name: "one-more", kind: "NUMERIC" })).rejects.toThrow(/at most 200 score configs/);
  });
});
