// The runs of one claim begin together, and each reads the same kinds of things before its first
// model request: its skills, its principal's MCP servers, its frozen materials. Those reads go to
// the database once per claim, for all of its runs, not once per run (runtime/batched-reads.ts) —
// a burst of runs on one worker no longer queues hundreds of statements between its claims and
// its model requests — and each run still gets what is its own: its principal's stored skills,
// nobody else's.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { UpsertSkillDocument } from "../../sdk/generated/graphql.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { type ChatBody, type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { closedAfterEach } from "../support/per-test.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Runs admitted while the worker is stopped, then claimed in its rounds (claim-passes.ts: 1, 4, then the other 11). */
const RUNS = 16;
/** The statement beginning a claim's first attempts (first-attempt-statement.ts): one per claim. */
const CLAIM = /^\s*WITH runs AS \(/;
/** The runs are of two principals, one after the other. */
const PRINCIPALS = 2;
const READS = { skills: /FROM "public"\."skill"/, mcpServers: /FROM "public"\."mcp_server"/, materials: /FROM "public"\."run_material"/ };

let stub: OpenAIStreamStub | undefined;
let t: TestApp | undefined;
const closing = closedAfterEach();

describe.each(backends)("the runs of a claim on %s", (backend) => {
  it(`read their skills, MCP servers and materials once per claim, not once per run (${RUNS} runs)`, async () => {
    const statements: string[] = [];
    /** The load_skill tool's description each run's first model request offered, by its question. */
    const offered = new Map<string, string>();
    stub = closing(
      await startOpenAIStreamStub((body) => {
        const question = body.messages.find((m) => m.role === "user")?.content ?? "";
        const tools = (body as ChatBody & { tools?: { function: { name: string; description: string } }[] }).tools ?? [];
        offered.set(question, tools.find((tool) => tool.function.name === "load_skill")?.function.description ?? "");
        return { text: ["Done."] };
      }),
    );
    const model = new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000 });
    t = closing(
      await startTestApp(backend, {
        database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }),
        runtime: { model, concurrency: RUNS, schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-claim-reads-")) },
      }),
    );
    // One principal has a stored skill; the other's runs must not be offered it.
    await t.client.request(UpsertSkillDocument, { input: { name: "house-style", description: "How we write.", body: "Short sentences." } });
    const other = t.as(await t.createPrincipal("Other"));
    const worker = t.app.runtime!.worker;
    await worker.stop();
    const admitted = [];
    for (let i = 0; i < RUNS; i += 1) {
      const client = i % PRINCIPALS === 0 ? t.client : other;
      admitted.push({ client, own: i % PRINCIPALS === 0, question: `question ${i}`, run: (await admit(client, { question: `question ${i}` })).run });
    }
    const from = statements.length;
    worker.start();
    for (const { client, run } of admitted) expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
    const sent = statements.slice(from);

    const claims = sent.filter((sql) => CLAIM.test(sql)).length;
    const reads = Object.fromEntries(Object.entries(READS).map(([kind, pattern]) => [kind, sent.filter((sql) => pattern.test(sql)).length]));
    // The worker claimed the runs in a few claims, and each claim read the skills and the materials once for all of its runs.
    expect(claims).toBeGreaterThan(0);
    expect(claims).toBeLessThanOrEqual(4);
    expect({ skills: reads.skills! <= claims, materials: reads.materials! <= claims }).toEqual({ skills: true, materials: true });
    // A principal's MCP servers are read again only once the read before it is applied: at most one per claim and principal.
    expect(reads.mcpServers).toBeLessThanOrEqual(claims * PRINCIPALS);
    // Each run was offered its own principal's skills.
    for (const { own, question } of admitted) {
      expect({ question, offered: offered.get(question)?.includes("- house-style: How we write.") }).toEqual({ question, offered: own });
    }
  });
});
