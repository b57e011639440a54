// The live trace viewer page (/traces/<runId>) in headless Chromium against a running server:
// the span tree fills in live, keeps going across a server restart (afterSeq), and ends
// matching the database. Needs Debian's chromium (.ci/run installs it).
import { existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { type RunningServer, startHttpServer } from "../../src/server/http-server.js";
import { type ScriptStep, ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import type { SpanRef } from "../../src/runtime/ports/trace-sink.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { createClient } from "../../sdk/client.js";
import { admit } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { gateTool } from "../support/viewer-browser.js";
import { waitUntil } from "../support/wait.js";
import type { Tool } from "../../src/runtime/ports/tool.js";

const CHROMIUM = "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && !process.env.CI) {
  console.warn(`trace viewer browser tests SKIPPED: ${CHROMIUM} is missing (apt-get install -y chromium)`);
}

// The first turn also waits at a gate the test opens once the page has loaded, so the rest happens live.
const slowPlan: ScriptStep[] = [
  ...Array.from({ length: 6 }, (_, i) => ({
    toolCalls: [{ name: "task_list", arguments: { action: "add", title: `step ${i}` } }, ...(i === 0 ? [{ name: "gate", arguments: {} }] : [])],
    delayMs: 350,
  })),
  { content: "Planned six steps.", delayMs: 200 },
];

/** Events the tree shows: a row each, consecutive thinking deltas of a span counted in their one row. */
const eventsShown = (page: Page) =>
  page.$$eval("[data-testid=event]", (rows) => rows.reduce((sum, row) => sum + Number((row as HTMLElement).dataset.count), 0));

const traceIdOf = (runId: string) => Buffer.from(runId, "base64").toString("utf8").split(":")[1]!;

/** The API's default page of spans and of events. */
const PAGE = 500;

describe("the trace viewer page", () => {
  it.runIf(!haveChromium && process.env.CI)("has Chromium on CI", () => {
    expect.fail(`${CHROMIUM} is missing on CI: .ci/run should have installed it (apt-get install -y chromium)`);
  });

  describe.runIf(haveChromium)("in Chromium", () => {
    let browser: Browser;
    let t: TestApp | undefined;
    let server: RunningServer | undefined;

    beforeAll(async () => {
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
      });
    });
    afterAll(async () => browser?.close());
    afterEach(async () => {
      await server?.close();
      await t?.close();
      server = undefined;
      t = undefined;
    });

    async function start(steps: ScriptStep[], extraTools: Tool[] = [], trustedDocuments?: { only: boolean }) {
      t = await startTestApp("pglite", {
        authRequired: true,
        trustedDocuments,
        runtime: { model: new ScriptedModel({ name: "viewer", steps }), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-viewer-")), extraTools },
      });
      server = await startHttpServer({ app: t.app, port: 0, host: "127.0.0.1" });
      return t;
    }
    const pageUrl = (runId: string, key?: string) =>
      `http://127.0.0.1:${server!.port}/traces/${encodeURIComponent(runId)}${key ? `#key=${encodeURIComponent(key)}` : ""}`;

    it("shows the span tree live with timings, event previews, usage and cost, across a server restart", async () => {
      let open = () => {};
      const app = await start(slowPlan, [gateTool("gate", new Promise<void>((resolve) => (open = resolve)))]);
      await app.app.db.prisma.modelPrice.create({
        data: { model: "viewer", effectiveFrom: new Date("2020-01-01T00:00:00Z"), inputPerMillion: "2.5", outputPerMillion: "10" },
      });
      const key = await app.createPrincipal("viewer");
      const { run } = await admit(app.as(key), { question: "Plan six steps" });
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(String(error)));

      await page.goto(pageUrl(run.id, key));
      await page.waitForSelector('[data-testid=span][data-kind="RUN"]', { timeout: 15_000 });
      expect(page.url()).not.toContain("#key="); // the key leaves the address bar
      await page.waitForSelector("body[data-connection=live]");
      const seenAtLoad = await page.$$eval("[data-testid=span]", (spans) =>
        spans.filter((s) => (s as HTMLElement).dataset.status !== "RUNNING").map((s) => (s as HTMLElement).dataset.spanId!),
      );
      open();
      // A span that ends after the page loaded shows up by itself: the page is live.
      await page.waitForFunction(
        (known) =>
          [...document.querySelectorAll<HTMLElement>("[data-testid=span]")].some(
            (s) => s.dataset.kind === "TOOL_CALL" && s.dataset.status === "OK" && !known.includes(s.dataset.spanId!),
          ),
        seenAtLoad,
        { timeout: 15_000 },
      );
      expect(await page.textContent("[data-testid=connection]")).toBe("live");

      // The server goes away mid-run and comes back on the same port: the page resumes after its last seq.
      const { port } = server!;
      await server!.close();
      await page.waitForSelector("body[data-connection=reconnecting]", { timeout: 10_000 });
      server = await startHttpServer({ app: app.app, port, host: "127.0.0.1" });

      await page.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 30_000 });
      expect(await page.textContent("[data-testid=answer]")).toBe("Planned six steps.");

      // What the page shows equals the database: every span and event once, nothing missing.
      const traceId = traceIdOf(run.id);
      const spans = await app.app.db.prisma.span.findMany({ where: { traceId } });
      const events = await app.app.db.prisma.spanEvent.count({ where: { span: { traceId } } });
      const shown = await page.$$eval("[data-testid=span]", (rows) =>
        rows.map((r) => ({ id: (r as HTMLElement).dataset.spanId, status: (r as HTMLElement).dataset.status })),
      );
      expect(shown.map((s) => s.id).sort()).toEqual(spans.map((s) => encodeGlobalId("Span", s.id)).sort());
      expect(new Set(shown.map((s) => s.status))).toEqual(new Set(["OK"]));
      expect(await eventsShown(page)).toBe(events);
      // Nested: the tool calls (six steps and the gate) sit inside turns inside the run.
      expect(await page.locator('[data-kind="RUN"] [data-kind="TURN"] [data-kind="TOOL_CALL"]').count()).toBe(7);
      // Timings and previews.
      const durations = await page.$$eval("[data-testid=span-row] .dur", (cells) => cells.map((c) => c.textContent ?? ""));
      expect(durations.every((d) => /^\d+(\.\d+)? (ms|s)$/.test(d))).toBe(true);
      expect(await page.locator('[data-testid=event][data-kind="TOOL_INPUT"]').first().textContent()).toContain("step 0");
      // Token usage: the sum of every model call's own usage.
      const usage = spans.reduce(
        (sum, s) => {
          const u = s.usage as { input?: number; output?: number } | null;
          return { input: sum.input + (u?.input ?? 0), output: sum.output + (u?.output ?? 0) };
        },
        { input: 0, output: 0 },
      );
      expect(usage.input).toBeGreaterThan(0);
      expect(await page.textContent("[data-testid=usage]")).toBe(`in ${usage.input} · out ${usage.output} · cached 0 · reasoning 0`);
      // Cost next to tokens: the run's (Run.cost, exactly) in the header, each model call's own on its row.
      const { cost } = await app.app.db.prisma.run.findUniqueOrThrow({ where: { id: traceId } });
      expect(Number(cost)).toBeGreaterThan(0);
      expect(await page.textContent("[data-testid=cost]")).toBe(`$${cost.toFixed()}`);
      const calls = spans.filter((s) => s.kind === "MODEL_CALL");
      const rowCosts = await page.$$eval('[data-kind="MODEL_CALL"] > [data-testid=span-row] [data-testid=span-cost]', (cells) =>
        cells.map((c) => c.textContent),
      );
      expect(rowCosts.sort()).toEqual(calls.map((c) => ` · $${c.cost!.toFixed()}`).sort());
      expect(errors).toEqual([]);

      const screenshot = path.join(projectRoot, "test-results", "trace-viewer.png");
      mkdirSync(path.dirname(screenshot), { recursive: true });
      await page.screenshot({ path: screenshot, fullPage: true });
      console.log(`trace viewer screenshot: ${screenshot}`);
      await page.close();
    }, 120_000);

    it("works on a server that runs only trusted documents (TRUSTED_DOCUMENTS_ONLY=true): the trace, live, to its end", async () => {
      let open = () => {};
      const app = await start(slowPlan, [gateTool("gate", new Promise<void>((resolve) => (open = resolve)))], { only: true });
      const key = await app.createPrincipal("viewer");
      const { run } = await admit(
        createClient({ url: `http://127.0.0.1:${server!.port}/graphql`, headers: { authorization: `Bearer ${key}` }, trustedDocuments: true }),
        { question: "Plan six steps" },
      );
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(String(error)));
      await page.goto(pageUrl(run.id, key));
      await page.waitForSelector("body[data-connection=live]", { timeout: 15_000 });
      open();
      await page.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 30_000 });
      expect(await page.textContent("[data-testid=answer]")).toBe("Planned six steps.");
      expect(await eventsShown(page)).toBe(await app.app.db.prisma.spanEvent.count({ where: { span: { traceId: traceIdOf(run.id) } } }));
      // Its model has no price here: the page says the cost is unknown rather than $0.
      expect(await page.textContent("[data-testid=cost]")).toBe("unpriced");
      const rowCosts = await page.$$eval('[data-kind="MODEL_CALL"] > [data-testid=span-row] [data-testid=span-cost]', (cells) =>
        cells.map((c) => c.textContent),
      );
      expect(rowCosts.length).toBeGreaterThan(0);
      expect(new Set(rowCosts)).toEqual(new Set([" · unpriced"]));
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);

    it("shows another principal's run to nobody, and asks for a key when none is given", async () => {
      const app = await start([{ content: "done" }]);
      const owner = await app.createPrincipal("owner");
      const stranger = await app.createPrincipal("stranger");
      const { run } = await admit(app.as(owner), { question: "mine" });

      const page = await browser.newPage();
      await page.goto(pageUrl(run.id, stranger));
      await page.waitForSelector("body[data-connection=refused]");
      expect(await page.textContent("[data-testid=message]")).toContain("No run with this id is visible to this API key");
      expect(await page.locator("[data-testid=span]").count()).toBe(0);
      await page.close();

      // A fresh browser profile without a key: the server's refusal, and a field to enter one.
      const context = await browser.newContext();
      const keyless = await context.newPage();
      await keyless.goto(pageUrl(run.id));
      await keyless.waitForSelector("body[data-connection=refused]");
      expect(await keyless.textContent("[data-testid=message]")).toMatch(/key/i);
      expect(await keyless.isVisible("#key-form")).toBe(true);
      await keyless.fill("#key-input", owner);
      await keyless.click("#key-form button");
      await keyless.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 15_000 });
      expect(await keyless.textContent("[data-testid=answer]")).toBe("done");
      await context.close();
    });

    it("shows every span and event of a trace longer than a page", async () => {
      const app = await start([{ content: "done" }]);
      const key = await app.createPrincipal("long");
      const { run } = await admit(app.as(key), { question: "A long trace" });
      // A run's trace shares its id.
      const traceId = traceIdOf(run.id);
      const prisma = app.app.db.prisma;
      await waitUntil(async () => ((await prisma.run.findUniqueOrThrow({ where: { id: traceId } })).status === "SUCCEEDED" ? true : undefined));
      // More spans, and more events on one span, than a page of the API holds (500), written as the runtime writes them.
      const recorder = new PrismaTraceRecorder({ prisma, events: app.app.events });
      const root = await prisma.span.findFirstOrThrow({ where: { traceId, parentId: null } });
      const extra: SpanRef[] = [];
      for (let i = 0; i < PAGE + 20; i += 1) {
        extra.push(await recorder.startSpan({ traceId, parent: { id: root.id, traceId }, kind: "TOOL_CALL", name: `extra ${i}` }));
      }
      await Promise.all(Array.from({ length: PAGE + 20 }, (_, i) => recorder.event(extra[0]!, "THINKING", `note ${i}`)));

      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(String(error)));
      await page.goto(pageUrl(run.id, key));
      await page.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 30_000 });
      const spans = await prisma.span.findMany({ where: { traceId }, select: { id: true } });
      expect(spans.length).toBeGreaterThan(PAGE);
      const shown = await page.$$eval("[data-testid=span]", (rows) => rows.map((r) => (r as HTMLElement).dataset.spanId!));
      expect(shown.sort()).toEqual(spans.map((s) => encodeGlobalId("Span", s.id)).sort());
      expect(await page.textContent("[data-testid=span-count]")).toBe(String(spans.length));
      expect(await eventsShown(page)).toBe(await prisma.spanEvent.count({ where: { span: { traceId } } }));
      // The span with more events than a page shows them all, in order, in its details.
      const many = page.locator(`[data-span-id="${encodeGlobalId("Span", extra[0]!.id)}"]`);
      expect(await many.locator("[data-testid=event][data-kind=THINKING]").getAttribute("data-count")).toBe(String(PAGE + 20));
      await many.locator("> [data-testid=span-row]").click();
      await page.waitForSelector(`[data-testid=panel][data-span-id="${encodeGlobalId("Span", extra[0]!.id)}"]`);
      const notes = await page.$$eval("[data-testid=panel-event] .preview", (rows) => rows.map((r) => r.textContent));
      expect(notes).toEqual(Array.from({ length: PAGE + 20 }, (_, i) => `note ${i}`));
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);

    it("is served only for GET", async () => {
      await start([{ content: "x" }]);
      const page = await fetch(`http://127.0.0.1:${server!.port}/traces/abc`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toContain("text/html");
      expect(page.headers.get("content-security-policy")).toMatch(/script-src 'nonce-/);
      // No other site may frame the viewer (clickjacking).
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      // The page talks to its own server only (the live test above proves its WebSocket still connects).
      expect(page.headers.get("content-security-policy")).toContain("connect-src 'self';");
      // A page of another origin that opens the viewer gets no handle to load it again with a key of its choosing.
      expect(page.headers.get("cross-origin-opener-policy")).toBe("same-origin");
      expect((await fetch(`http://127.0.0.1:${server!.port}/traces/abc`, { method: "POST" })).status).toBe(405);
      // Base64 run ids may hold a "/", unencoded when pasted by hand.
      expect((await fetch(`http://127.0.0.1:${server!.port}/traces/UnVu/OjE=`)).status).toBe(200);
    });
  });
});
