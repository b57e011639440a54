// R0, W4: admission freezes the agent profile. A changed AGENTS_FILE definition is a new profile
// version at the next start; a run executes the version it was admitted under (prompt, tools,
// skills) even when it starts after the change, and says which one it was.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AgentProfileDocument, AgentProfilesDocument, RunAgentProfileDocument } from "../../sdk/generated/graphql.js";
import type { AgentProfile } from "../../src/config.js";
import { AgentProfileVersions } from "../../src/domain/capabilities/agent-profile-versions.js";
import type { ModelRequest } from "../../src/runtime/ports/model.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends, createPersistentTestDatabase } from "../support/databases.js";
import { admit, expectType, startConversation } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const V1: AgentProfile = { name: "analyst", systemPrompt: "You compare figures, version one.", tools: ["task_list", "load_skill"] };
const V2: AgentProfile = {
  name: "analyst",
  systemPrompt: "You compare figures, version two.",
  tools: ["read_material", "task_list", "load_skill"],
  skills: ["source-*"],
};

/** The question a request was made for: the first user message after the system prompt. */
const questionOf = (request: ModelRequest) => request.messages.find((message) => message.role === "user")?.content;

const offered = (request: ModelRequest) => request.tools.map((tool) => tool.name).sort();
const skillsOffered = (request: ModelRequest) =>
  (request.tools.find((tool) => tool.name === "load_skill")!.parameters as { properties: { name: { enum: string[] } } }).properties.name.enum;

describe.each(backends)("agent profile versions on %s", (backend) => {
  const apps: TestApp[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function persistentDatabase() {
    const persistent = await createPersistentTestDatabase(backend);
    cleanups.push(() => persistent.drop());
    return persistent;
  }

  async function start(persistent: Awaited<ReturnType<typeof createPersistentTestDatabase>>, agents: AgentProfile[], model?: ScriptedModel) {
    const t = await startTestApp(backend, {
      database: () => persistent.open(),
      agents,
      runtime: model ? { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-profiles-")) } : undefined,
    });
    apps.push(t);
    return t;
  }

  async function profileOf(t: TestApp, runId: string) {
    const node = expectType((await t.client.request(RunAgentProfileDocument, { id: runId })).node!, "Run");
    return node.agentProfile;
  }

  it("runs admitted before a profile change execute the old version, runs after it the new one", async () => {
    const persistent = await persistentDatabase();
    // Admitted while AGENTS_FILE says V1, by a server that executes nothing: the runs wait in the queue.
    let t = await start(persistent, [V1]);
    const conversation = await startConversation(t.client);
    const oneStatement = await admit(t.client, { question: "Q1 without a conversation", agent: "analyst" });
    const transactional = await admit(t.client, { question: "Q1 in a conversation", agent: "analyst", conversationId: conversation.id });
    expect((await profileOf(t, oneStatement.run.id))?.version).toBe(1);
    await apps.pop()!.close();

    // The file now says V2; the restarted server executes the waiting runs and admits a new one.
    const model = new ScriptedModel({ name: "profiles", steps: (request) => ({ content: `answer to ${questionOf(request)}` }) });
    t = await start(persistent, [V2], model);
    const after = await admit(t.client, { question: "Q2 after the change", agent: "analyst" });
    for (const run of [oneStatement.run, transactional.run, after.run]) expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");

    const requestFor = (question: string) => model.requests.find((request) => questionOf(request) === question)!;
    for (const question of ["Q1 without a conversation", "Q1 in a conversation"]) {
      const request = requestFor(question);
      expect(request.messages[0]).toEqual({ role: "system", content: V1.systemPrompt });
      expect(offered(request)).toEqual(["load_skill", "task_list"]);
      // V1 names no skills: every built-in skill is offered.
      expect(skillsOffered(request)).toEqual(["research-checkpoint", "source-evaluation", "spilled-results", "stuck-payment"]);
    }
    const second = requestFor("Q2 after the change");
    expect(second.messages[0]).toEqual({ role: "system", content: V2.systemPrompt });
    expect(offered(second)).toEqual(["load_skill", "read_material", "task_list"]);
    expect(skillsOffered(second)).toEqual(["source-evaluation"]);

    // Each run says which version it executed.
    for (const run of [oneStatement.run, transactional.run]) {
      expect(await profileOf(t, run.id)).toMatchObject({
        name: "analyst",
        version: 1,
        systemPrompt: V1.systemPrompt,
        tools: ["load_skill", "task_list"],
        skills: null,
      });
    }
    expect(await profileOf(t, after.run.id)).toMatchObject({
      name: "analyst",
      version: 2,
      systemPrompt: V2.systemPrompt,
      tools: ["load_skill", "read_material", "task_list"],
      skills: ["source-*"],
    });

    const listed = (await t.client.request(AgentProfilesDocument, {})).agentProfiles.edges.map((edge) => edge.node);
    expect(listed.map((profile) => `${profile.name} v${profile.version}`)).toEqual(["analyst v2", "analyst v1", "researcher v1"]);
    expect((await t.client.request(AgentProfileDocument, { name: "analyst", version: 1 })).agentProfile?.systemPrompt).toBe(V1.systemPrompt);
    expect((await t.client.request(AgentProfileDocument, { name: "analyst" })).agentProfile?.version).toBe(2);
    expect((await t.client.request(AgentProfileDocument, { name: "analyst", version: 3 })).agentProfile).toBeNull();
  }, 180_000);

  it("a restart with an unchanged file, tools listed in another order, adds no version", async () => {
    const persistent = await persistentDatabase();
    const first = await start(persistent, [V2]);
    const before = (await first.client.request(AgentProfilesDocument, {})).agentProfiles.edges.map((edge) => edge.node);
    await apps.pop()!.close();

    const again = await start(persistent, [{ ...V2, tools: [...V2.tools!].reverse() }]);
    expect((await again.client.request(AgentProfilesDocument, {})).agentProfiles.edges.map((edge) => edge.node)).toEqual(before);
    const { run } = await admit(again.client, { question: "Same profile", agent: "analyst" });
    expect((await profileOf(again, run.id))?.id).toBe(before.find((profile) => profile.name === "analyst")!.id);
  }, 120_000);

  it("instances loading the same changed file at once create exactly one new version", async () => {
    const persistent = await persistentDatabase();
    await start(persistent, [V1]);
    await apps.pop()!.close();

    // PostgreSQL: four instances with their own connections. PGlite belongs to one process: four
    // loaders over its one client, interleaving their reads and inserts.
    const opened =
      backend === "postgres" ? await Promise.all([1, 2, 3, 4].map(() => persistent.open())) : await persistent.open().then((one) => [one, one, one, one]);
    cleanups.push(async () => void (await Promise.all([...new Set(opened)].map((handle) => handle.dispose()))));
    const loaders = opened.map(({ db }) => new AgentProfileVersions({ prisma: db.prisma, definitions: [V2] }));
    const loaded = await Promise.all(loaders.map((loader) => loader.current("analyst")));

    expect(new Set(loaded.map((profile) => profile.id)).size).toBe(1);
    expect(loaded[0]).toMatchObject({ name: "analyst", version: 2, systemPrompt: V2.systemPrompt });
    const stored = await opened[0]!.db.prisma.agentProfile.findMany({ where: { name: "analyst" }, orderBy: { version: "asc" } });
    expect(stored.map((profile) => profile.version)).toEqual([1, 2]);
  }, 120_000);
});
