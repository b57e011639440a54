// The trace viewer as a reader uses it, in headless Chromium: a finished run's waterfall (bars
// sized by duration on one time axis), the collapsible tree with tokens, the details panel with
// attributes, events and whole payloads on demand, the budget gauge, the answer after its model
// call; a live run growing; a failed run and an interrupted attempt saying why. Screenshots of
// each go to test-results/ (trace-finished, trace-live, trace-failed, trace-interrupted, and
// their -phone variants).
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import type { ScriptStep } from "../../src/runtime/adapters/scripted-model.js";
import { admit } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import {
  barWidths,
  DESKTOP,
  gateTool,
  haveChromium,
  horizontalOverflow,
  launchChromium,
  openViewer,
  PHONE,
  reportTool,
  screenshot,
  spanRow,
  startViewerServer,
  type ViewerServer,
  waitTool,
} from "../support/viewer-browser.js";

const traceIdOf = (runId: string) => Buffer.from(runId, "base64").toString("utf8").split(":")[1]!;
const ended = (status: string) => `body[data-connection=ended][data-run-status=${status}]`;

/** Three turns: a slow tool, then a quick one beside a long report, then the answer; model calls of different lengths. */
const finishedPlan: ScriptStep[] = [
  { toolCalls: [{ name: "slow_tool", arguments: { ms: 900 } }], delayMs: 250 },
  {
    toolCalls: [
      { name: "quick_tool", arguments: { ms: 120 } },
      { name: "long_report", arguments: {} },
    ],
    delayMs: 60,
    usage: { cached: 40, reasoning: 12 },
  },
  { content: "Both tools answered; the report is 2000 characters long.", delayMs: 450 },
];

describe.runIf(haveChromium)("the trace viewer's waterfall, tree and details", () => {
  let browser: Browser;
  let app: ViewerServer | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => browser?.close());
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it("shows a finished run as a waterfall with its tree, tokens, budget, answer and details", async () => {
    app = await startViewerServer(finishedPlan, [waitTool("slow_tool", 900), waitTool("quick_tool", 120), reportTool(2000)]);
    const { run } = await admit(app.t.as(app.key), { question: "Run the slow tool, then the quick one and the report." });
    await settled(app.t.as(app.key), run.id);
    const { page, errors, requests } = await openViewer(browser, app.url(run.id));
    await page.waitForSelector(ended("SUCCEEDED"), { timeout: 15_000 });
    const prisma = app.t.app.db.prisma;
    const traceId = traceIdOf(run.id);
    const spans = await prisma.span.findMany({ where: { traceId } });

    // One bar per span on one time axis: ordered by duration, widths follow durations.
    const widths = await barWidths(page);
    expect(Object.keys(widths).sort()).toEqual(spans.map((s) => encodeGlobalId("Span", s.id)).sort());
    const byDuration = spans
      .map((s) => ({ s, ms: s.endedAt!.getTime() - s.startedAt.getTime(), px: widths[encodeGlobalId("Span", s.id)]! }))
      .sort((a, b) => a.ms - b.ms);
    for (let i = 1; i < byDuration.length; i += 1) expect(byDuration[i]!.px).toBeGreaterThanOrEqual(byDuration[i - 1]!.px - 0.5);
    const slow = byDuration.find((b) => b.s.name === "execute_tool slow_tool")!;
    const quick = byDuration.find((b) => b.s.name === "execute_tool quick_tool")!;
    expect(slow.px / quick.px).toBeCloseTo(slow.ms / quick.ms, 0);
    // The RUN span is the longest: its one attempt starts and ends with it, so they may tie.
    const runSpan = byDuration.find((b) => b.s.kind === "RUN")!;
    expect(runSpan.ms).toBe(byDuration.at(-1)!.ms);
    expect(runSpan.px).toBeGreaterThanOrEqual(byDuration.at(-1)!.px - 0.5);

    // Durations at a glance; tokens with cached and reasoning, per model call and in total.
    const durations = await page.$$eval("[data-testid=span-row] .dur", (cells) => cells.map((c) => c.textContent ?? ""));
    expect(durations.length).toBe(spans.length);
    expect(durations.every((d) => /^\d+(\.\d+)? (ms|s)$/.test(d))).toBe(true);
    type Usage = { input: number; output: number; cached: number; reasoning: number };
    const models = spans.filter((s) => s.kind === "MODEL_CALL").map((s) => ({ id: s.id, ...(s.usage as Usage) }));
    const total = models.reduce(
      (sum, u) => ({ input: sum.input + u.input, output: sum.output + u.output, cached: sum.cached + u.cached, reasoning: sum.reasoning + u.reasoning }),
      { input: 0, output: 0, cached: 0, reasoning: 0 },
    );
    expect(total).toMatchObject({ cached: 40, reasoning: 12 });
    expect(await page.textContent("[data-testid=usage]")).toBe(`in ${total.input} · out ${total.output} · cached 40 · reasoning 12`);
    const withCache = models.find((m) => m.cached === 40)!;
    expect(await page.textContent(`[data-span-id="${encodeGlobalId("Span", withCache.id)}"] > [data-testid=span-row] [data-testid=tokens]`)).toBe(
      `${withCache.input} / ${withCache.output} / 40 / 12`,
    );

    // The budget of each turn as a gauge (used / trigger / window), not JSON.
    const budgets = await prisma.spanEvent.findMany({ where: { span: { traceId }, kind: "BUDGET" }, orderBy: { seq: "asc" } });
    expect(budgets).toHaveLength(3);
    const gauges = await page.$$eval("[data-testid=event][data-kind=BUDGET] [data-testid=budget]", (nodes) =>
      nodes.map((n) => ({ ...(n as HTMLElement).dataset, text: n.textContent })),
    );
    expect(gauges).toEqual(
      budgets.map((b) => {
        const figures = JSON.parse(b.payload) as { estimate: number; trigger: number; effectiveWindow: number };
        // In the tree, figures of 10,000 and more read in thousands.
        const f = (n: number) => (n < 10_000 ? n.toLocaleString("en-US") : `${Math.round(n / 100) / 10}k`);
        return {
          testid: "budget",
          used: String(figures.estimate),
          trigger: String(figures.trigger),
          window: String(figures.effectiveWindow),
          text: `${f(figures.estimate)} used · trigger ${f(figures.trigger)} · window ${f(figures.effectiveWindow)}`,
        };
      }),
    );
    expect(await page.locator("[data-testid=tree]").textContent()).not.toContain('"effectiveWindow"');

    // The answer comes after the model call that produced it, inside its turn.
    const lastTurn = page.locator("[data-testid=span][data-kind=TURN]").last();
    const order = await lastTurn.evaluate((turn) => {
      const model = turn.querySelector("[data-kind=MODEL_CALL]")!;
      const answer = turn.querySelector("[data-testid=event][data-kind=FINAL_REPLY]")!;
      return model.compareDocumentPosition(answer) & Node.DOCUMENT_POSITION_FOLLOWING;
    });
    expect(order).toBeTruthy();
    expect(await lastTurn.locator("[data-testid=event][data-kind=FINAL_REPLY] .preview").textContent()).toBe(finishedPlan[2]!.content);
    expect(await page.textContent("[data-testid=answer]")).toBe(finishedPlan[2]!.content);

    // The tree collapses and expands (the page redraws on the next animation frame).
    const firstTurn = page.locator("[data-testid=span][data-kind=TURN]").first();
    await firstTurn.locator("> [data-testid=span-row] [data-testid=toggle]").click();
    await expect.poll(() => firstTurn.getAttribute("data-collapsed")).toBe("true");
    expect(await firstTurn.locator("[data-kind=TOOL_CALL]").count()).toBe(0);
    await firstTurn.locator("> [data-testid=span-row] [data-testid=toggle]").click();
    await expect.poll(() => firstTurn.locator("[data-kind=TOOL_CALL]").count()).toBe(1);

    // The details panel: attributes, events with previews, the whole payload on demand.
    await spanRow(page, "TOOL_CALL", "long_report").click();
    const panel = page.locator("[data-testid=panel]");
    await expect.poll(() => panel.locator("[data-testid=attributes]").textContent()).toContain("gen_ai.tool.namelong_report");
    expect(await panel.locator("[data-testid=panel-event]").evaluateAll((events) => events.map((e) => (e as HTMLElement).dataset.kind))).toEqual([
      "TOOL_INPUT",
      "TOOL_OUTPUT",
    ]);
    const output = panel.locator("[data-testid=panel-event][data-kind=TOOL_OUTPUT]");
    expect((await output.locator("pre.preview").textContent())!.length).toBeLessThan(600);
    await output.locator("[data-testid=load-payload]").click();
    const whole = await reportTool(2000).execute({}, {} as never);
    await expect.poll(() => output.locator("[data-testid=payload]").textContent()).toBe(whole);

    // A model call: its attributes, budget and the whole request it sent, read on demand.
    await spanRow(page, "MODEL_CALL", "chat").first().click();
    await expect.poll(() => panel.locator("[data-testid=attributes]").textContent()).toContain("gen_ai.request.model");
    // In the panel, the model call's budget with exact figures: the first turn's.
    const first = JSON.parse(budgets[0]!.payload) as { estimate: number; trigger: number; effectiveWindow: number };
    expect(await panel.locator("> [data-testid=budget]").textContent()).toBe(
      `${first.estimate.toLocaleString("en-US")} used · trigger ${first.trigger.toLocaleString("en-US")} · window ${first.effectiveWindow.toLocaleString("en-US")}`,
    );
    await panel.locator("[data-testid=load-request]").click();
    await expect.poll(() => panel.locator("[data-testid=request]").textContent()).toContain("Run the slow tool, then the quick one and the report.");

    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await screenshot(page, "trace-finished");
    await page.setViewportSize(PHONE);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await screenshot(page, "trace-finished-phone", true);
    expect(errors).toEqual([]);
    // Self-contained: everything the page asked for came from Dossier itself (its icon is inline).
    const origin = `http://127.0.0.1:${app.server.port}/`;
    expect(requests.filter((url) => !url.startsWith(origin) && !url.startsWith("data:"))).toEqual([]);
    expect(await page.$eval("link[rel=icon]", (icon) => (icon as HTMLLinkElement).href)).toMatch(/^data:image\/svg\+xml,/);
    await page.close();
  }, 150_000);

  it("grows a running span's bar and adds rows live", async () => {
    let open = () => {};
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    // The slow tool runs until the test has looked at it, however slow the machine is.
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const plan: ScriptStep[] = [
      { toolCalls: [{ name: "gate", arguments: {} }], delayMs: 150 },
      { toolCalls: [{ name: "slow_tool", arguments: {} }], delayMs: 100 },
      { content: "Done after the slow tool.", delayMs: 100 },
    ];
    app = await startViewerServer(plan, [gateTool("slow_tool", released), gateTool("gate", opened)]);
    const client = app.t.as(app.key);
    const { run } = await admit(client, { question: "Wait for the slow tool." });
    const { page, errors } = await openViewer(browser, app.url(run.id));
    await page.waitForSelector("[data-testid=span][data-kind=RUN]", { timeout: 15_000 });
    await page.waitForSelector("body[data-connection=live]");
    await page.waitForSelector("[data-testid=span][data-kind=TOOL_CALL][data-status=RUNNING]", { timeout: 15_000 });
    const atLoad = await page.$$eval("[data-testid=span]", (rows) => rows.map((r) => (r as HTMLElement).dataset.spanId!));
    open(); // the gate opens once the page shows the run waiting at it

    // The slow tool's row appears by itself while it runs, and its bar grows with time.
    const slowRow = page.locator("[data-testid=span][data-kind=TOOL_CALL][data-status=RUNNING]").filter({ hasText: "slow_tool" });
    await slowRow.waitFor({ timeout: 15_000 });
    expect(atLoad).not.toContain(await slowRow.getAttribute("data-span-id"));
    const bar = slowRow.locator("> [data-testid=span-row] [data-testid=bar]");
    // A bar that has only just started has no width yet, and Playwright gives no box for it.
    const width = async () => (await bar.boundingBox())?.width ?? 0;
    const before = await width();
    await expect.poll(width, { timeout: 3_000 }).toBeGreaterThan(before + 20);
    expect(await slowRow.locator("> [data-testid=span-row] .dur").textContent()).toMatch(/ …$/);
    expect(await page.textContent("[data-testid=run-status]")).toBe("RUNNING");
    await screenshot(page, "trace-live");
    await page.setViewportSize(PHONE);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await screenshot(page, "trace-live-phone");
    await page.setViewportSize(DESKTOP);
    release();

    await page.waitForSelector(ended("SUCCEEDED"), { timeout: 20_000 });
    expect(await page.locator("[data-testid=bar].RUNNING").count()).toBe(0);
    expect(await page.textContent("[data-testid=answer]")).toBe("Done after the slow tool.");
    expect(errors).toEqual([]);
    await page.close();
  }, 150_000);
});
