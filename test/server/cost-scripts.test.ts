// The operator's cost scripts, run as an operator runs them — separate processes on a real
// PostgreSQL database beside a running app: `npm run prices:set` writes operator price entries that
// then price a run's model calls; `npm run limits:set` sets (and clears) a principal's daily cost
// limit that then stops its run. Bad input exits non-zero with a message and writes nothing.
import { mkdtempSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { toDecimal } from "../../src/domain/costs/pricing.js";
import { encodeGlobalId } from "../../src/domain/global-id.js";
import { fromStored } from "../../src/domain/text/stored-text.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends, openTestDatabase } from "../support/databases.js";
import { type Body, REQUEST_COST, startPricedServer } from "../support/priced-model-server.js";
import { killAll, type Spawned, spawnTs } from "../support/processes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.runIf(backends.includes("postgres"))("prices:set and limits:set on PostgreSQL", () => {
  let t: TestApp;
  let url: string;
  let server: Server;
  const bodies: Body[] = [];
  const running: Spawned[] = [];

  beforeAll(async () => {
    server = await startPricedServer(bodies);
    const { port } = server.address() as AddressInfo;
    t = await startTestApp("postgres", {
      database: async () => {
        const opened = await openTestDatabase("postgres");
        url = opened.url!;
        return opened;
      },
      runtime: {
        model: new OpenAIModel({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "sk-local", model: "priced-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-cost-scripts-")),
        contextBudget: { reservedOutput: 10 },
      },
    });
  });
  afterAll(async () => {
    await killAll(running);
    await t?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  /** Runs the script to completion against the app's database; its exit code and what it printed. */
  async function script(file: string, args: string[]) {
    const p = spawnTs(file, { env: { DATABASE_URL: url }, args });
    running.push(p);
    const { code } = await p.exited;
    return { code, output: p.output() };
  }
  const prices = () => t.app.db.prisma.modelPrice.findMany({ where: { principalId: null }, orderBy: [{ model: "asc" }, { effectiveFrom: "asc" }] });
  const settled = (runId: string) =>
    vi.waitFor(
      async () => {
        const run = await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
        expect(["QUEUED", "RUNNING"]).not.toContain(run.status);
        return run;
      },
      { timeout: 30_000, interval: 100 },
    );

  it("prices:set refuses bad input with a message and writes nothing", async () => {
    for (const [args, message] of [
      [["--model", "priced-model", "--input", "abc", "--output", "1"], /inputPerMillion/],
      [["--model", "priced-model", "--input=-1", "--output", "1"], /inputPerMillion/],
      [["--model", "priced-model", "--input", "-1", "--output", "1"], /--input.*\n.*usage: npm run prices:set/],
      [["--model", "priced-model", "--input", "1"], /usage: npm run prices:set/],
      [["--model", "priced-model", "--input", "1", "--output", "2", "--effective-from", "yesterday"], /effectiveFrom/],
      [["--file", "/nonexistent/prices.json"], /prices\.json/],
    ] as const) {
      const { code, output } = await script("scripts/set-prices.ts", [...args]);
      expect(code, output).not.toBe(0);
      expect(output).toMatch(message);
      expect(output).not.toContain("    at "); // a message, not a stack trace
    }
    expect(await prices()).toEqual([]);
  }, 120_000);

  it("prices:set writes the operator's entries, from flags and from a file, and they price the next run's calls", async () => {
    const set = await script("scripts/set-prices.ts", [
      "--model",
      "priced-model",
      "--input",
      "100",
      "--output",
      "100000",
      "--reasoning",
      "50000",
      "--effective-from",
      "2020-01-01T00:00:00Z",
    ]);
    expect(set.code, set.output).toBe(0);
    expect(set.output).toContain("priced-model from 2020-01-01T00:00:00.000Z: input 100");
    const file = path.join(mkdtempSync(path.join(tmpdir(), "dossier-prices-")), "prices.json");
    writeFileSync(
      file,
      JSON.stringify({ prices: [{ model: "other-model", inputPerMillion: "0.15", cachedInputPerMillion: "0.075", outputPerMillion: "0.6" }] }),
    );
    const fromFile = await script("scripts/set-prices.ts", ["--file", file]);
    expect(fromFile.code, fromFile.output).toBe(0);
    const rows = (await prices()).map((p) => ({
      model: p.model,
      effectiveFrom: p.effectiveFrom.toISOString(),
      input: String(p.inputPerMillion),
      cached: p.cachedInputPerMillion === null ? null : String(p.cachedInputPerMillion),
      output: String(p.outputPerMillion),
      reasoning: p.reasoningPerMillion === null ? null : String(p.reasoningPerMillion),
    }));
    expect(rows).toEqual([
      { model: "other-model", effectiveFrom: "1970-01-01T00:00:00.000Z", input: "0.15", cached: "0.075", output: "0.6", reasoning: null },
      { model: "priced-model", effectiveFrom: "2020-01-01T00:00:00.000Z", input: "100", cached: null, output: "100000", reasoning: "50000" },
    ]);

    // A run of the app (which was already running) is priced by the entry: 1.005 USD a request.
    const { principal } = await t.app.services.principals.createPrincipal({ name: "Priced" });
    const { run } = await t.app.services.admissions.admitRun({ principalId: principal.id }, { question: "Priced?", limits: { maxTurns: 2 } });
    const ended = await settled(run.id);
    const calls = await t.app.db.prisma.span.findMany({ where: { trace: { runId: run.id }, kind: "MODEL_CALL" } });
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) expect(toDecimal(String(call.cost)).equals(REQUEST_COST)).toBe(true);
    expect(toDecimal(ended.cost).equals(REQUEST_COST.times(calls.length))).toBe(true);
    expect(ended.costUnpriced).toBe(false);
  }, 120_000);

  it("limits:set sets a principal's daily cost limit, which stops its run; none clears it; bad input writes nothing", async () => {
    const { principal } = await t.app.services.principals.createPrincipal({ name: "Limited" });
    const limit = (await script("scripts/set-limits.ts", ["--principal", encodeGlobalId("Principal", principal.id), "--daily-cost", "1.5"])).code;
    expect(limit).toBe(0);
    const row = () => t.app.db.prisma.principal.findUniqueOrThrow({ where: { id: principal.id } });
    expect(String((await row()).dailyCostLimit)).toBe("1.5");

    // Bad input: a message, a non-zero exit, and the limit unchanged.
    for (const [args, message] of [
      [["--principal", principal.id, "--daily-cost=-1"], /--daily-cost must be a decimal amount/],
      [["--principal", principal.id, "--daily-cost", "-1"], /--daily-cost.*\n.*usage: npm run limits:set/],
      [["--principal", principal.id, "--daily-cost", "0"], /--daily-cost must be more than 0/],
      [["--principal", principal.id], /usage: npm run limits:set/],
      [["--principal", "nobody", "--daily-cost", "3"], /No principal has the id nobody/],
    ] as const) {
      const { code, output } = await script("scripts/set-limits.ts", [...args]);
      expect(code, output).not.toBe(0);
      expect(output).toMatch(message);
      expect(output).not.toContain("    at ");
    }
    expect(String((await row()).dailyCostLimit)).toBe("1.5");

    // 1.005 USD spent and another request's bound (over 1 USD) would cross 1.5: the run stops.
    bodies.length = 0;
    const { run } = await t.app.services.admissions.admitRun({ principalId: principal.id }, { question: "Limited?", limits: { maxTurns: 50 } });
    const ended = await settled(run.id);
    expect(ended).toMatchObject({ status: "SUCCEEDED", stopReason: "BUDGET", answer: "Step 1." });
    expect(bodies).toHaveLength(1);
    const events = await t.app.db.prisma.spanEvent.findMany({ where: { span: { traceId: run.id }, kind: "BUDGET" } });
    const caps = events.map((event) => (JSON.parse(fromStored(event.payload)) as { cap?: string }).cap).filter(Boolean);
    expect(caps).toEqual(["DAILY_COST_LIMIT"]);

    const cleared = await script("scripts/set-limits.ts", ["--principal", principal.id, "--daily-cost", "none"]);
    expect(cleared.code, cleared.output).toBe(0);
    expect(cleared.output).toContain("is back to no daily limit");
    expect((await row()).dailyCostLimit).toBeNull();
  }, 120_000);
});
