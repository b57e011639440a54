// The trace viewer when a run does not go well, in headless Chromium: a failed run says why at
// the top (its reason and message) and marks the span that failed; an attempt interrupted by a
// worker's restart reads as interrupted, with the reason, never as cancelled; an address that is
// no valid encoding says it names no run instead of connecting for ever. Screenshots go to
// test-results/ (trace-failed, trace-failed-phone, trace-interrupted).
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ScriptStep } from "../../src/runtime/adapters/scripted-model.js";
import type { ModelPort } from "../../src/runtime/ports/model.js";
import { admit } from "../support/fixtures.js";
import { settled, spanStarted } from "../support/scripted-runs.js";
import {
  haveChromium,
  horizontalOverflow,
  launchChromium,
  openViewer,
  PHONE,
  screenshot,
  spanRow,
  startViewerServer,
  type ViewerServer,
  waitTool,
} from "../support/viewer-browser.js";

const ended = (status: string) => `body[data-connection=ended][data-run-status=${status}]`;

/** A model whose server cannot be reached. */
const unreachableModel: ModelPort = {
  label: "openai:unreachable",
  model: "unreachable",
  scripted: false,
  contextWindow: 128_000,
  complete: async () => {
    throw new Error("connect ECONNREFUSED 127.0.0.1:9");
  },
};

describe.runIf(haveChromium)("the trace viewer on failed and interrupted runs", () => {
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

  it("puts a failed run's reason and message first, and marks where it stopped", async () => {
    const looping: ScriptStep = { toolCalls: [{ name: "short_tool", arguments: { ms: 80 } }], delayMs: 40 };
    app = await startViewerServer([looping, looping, looping], [waitTool("short_tool", 80)]);
    const { run } = await admit(app.t.as(app.key), { question: "Keep calling the tool.", limits: { maxTurns: 2 } });
    expect(await settled(app.t.as(app.key), run.id)).toMatchObject({ status: "FAILED", failureReason: "MAX_TURNS" });
    const { page, errors } = await openViewer(browser, app.url(run.id));
    await page.waitForSelector(ended("FAILED"), { timeout: 15_000 });

    const banner = page.locator("[data-testid=failure]");
    expect(await banner.isVisible()).toBe(true);
    expect(await banner.locator("[data-testid=failure-reason]").textContent()).toBe("MAX_TURNS");
    await expect.poll(() => banner.locator("[data-testid=failure-message]").textContent()).toBe("the run used all 2 turns");
    // The banner comes before the tree, and the run's row carries the reason too.
    expect(await banner.evaluate((b) => b.compareDocumentPosition(document.getElementById("tree")!) & Node.DOCUMENT_POSITION_FOLLOWING)).toBeTruthy();
    const root = page.locator("[data-testid=span][data-kind=RUN]");
    expect(await root.getAttribute("data-status")).toBe("ERROR");
    expect(await root.locator("> [data-testid=span-row] .note").textContent()).toBe("MAX_TURNS");
    expect(await page.locator("[data-testid=answer]").isVisible()).toBe(false);

    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await root.locator("> [data-testid=span-row]").click();
    await expect.poll(() => page.locator("[data-testid=panel] [data-testid=attributes]").textContent()).toContain("failureReasonMAX_TURNS");
    await screenshot(page, "trace-failed");
    await page.setViewportSize(PHONE);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await screenshot(page, "trace-failed-phone");
    expect(errors).toEqual([]);
    await page.close();
  }, 150_000);

  it("shows a model that cannot be reached as the model call's error", async () => {
    app = await startViewerServer(unreachableModel);
    const { run } = await admit(app.t.as(app.key), { question: "Anyone there?" });
    const { page, errors } = await openViewer(browser, app.url(run.id));
    await page.waitForSelector(ended("FAILED"), { timeout: 30_000 });
    expect(await page.textContent("[data-testid=failure-reason]")).toBe("MODEL_ERROR");
    await expect.poll(() => page.textContent("[data-testid=failure-message]")).toContain("ECONNREFUSED");
    const call = page.locator("[data-testid=span][data-kind=MODEL_CALL]");
    expect(await call.getAttribute("data-status")).toBe("ERROR");
    const error = call.locator("[data-testid=event][data-kind=ERROR]");
    expect(await error.locator(".ekind").textContent()).toBe("error");
    expect(await error.locator(".preview").textContent()).toContain("ECONNREFUSED");
    expect(errors).toEqual([]);
    await page.close();
  }, 150_000);

  it("says an address whose path is no valid percent-encoding names no run, and asks the server nothing", async () => {
    app = await startViewerServer([{ content: "unused" }]);
    for (const runPath of ["%E0%A4%A", "UnVuOng%"]) {
      const { page, errors, requests } = await openViewer(browser, `http://127.0.0.1:${app.server.port}/traces/${runPath}#key=${app.key}`);
      await page.waitForSelector("body[data-connection=refused]", { timeout: 15_000 });
      expect(await page.textContent("[data-testid=message]")).toBe("This address names no run.");
      expect(await page.textContent("#run-id")).toBe(runPath);
      expect(requests.filter((url) => url.includes("/graphql"))).toEqual([]);
      expect(errors).toEqual([]);
      await page.close();
    }
  }, 60_000);

  it("labels an attempt interrupted by a worker restart as interrupted, with the reason", async () => {
    app = await startViewerServer([{ content: "never sent", delayMs: 120_000 }, { content: "Answered by the second attempt." }]);
    const client = app.t.as(app.key);
    const { run } = await admit(client, { question: "Survive a restart." });
    await spanStarted(client, run.id, "MODEL_CALL");
    const { page, errors } = await openViewer(browser, app.url(run.id));
    await page.waitForSelector("[data-testid=span][data-kind=MODEL_CALL][data-status=RUNNING]", { timeout: 15_000 });

    // The worker stops gracefully mid model call and starts again: attempt 2 answers.
    await app.t.app.runtime!.worker.stop();
    app.t.app.runtime!.worker.start();
    await page.waitForSelector(ended("SUCCEEDED"), { timeout: 30_000 });
    expect(await page.textContent("[data-testid=answer]")).toBe("Answered by the second attempt.");

    const first = page.locator("[data-testid=span][data-kind=ATTEMPT]").first();
    expect(await first.getAttribute("data-status")).toBe("INTERRUPTED");
    expect(await first.locator("> [data-testid=span-row] .note").textContent()).toBe("worker stopped");
    // The model call it was waiting for reads as interrupted, its abort as the interruption's doing.
    const call = first.locator("[data-testid=span][data-kind=MODEL_CALL]");
    expect(await call.getAttribute("data-status")).toBe("INTERRUPTED");
    const aborted = call.locator("[data-testid=event][data-kind=ERROR]");
    expect(await aborted.count()).toBe(1);
    expect(await aborted.locator(".ekind").textContent()).toBe("aborted");
    expect(await page.locator('[data-testid=span][data-status="CANCELLED"]').count()).toBe(0);
    const line = page.locator("[data-testid=interruption]");
    expect(await line.count()).toBe(1);
    expect(await line.textContent()).toMatch(/^Attempt 1 interruptedworker stoppedhanded back: attempt 1's instance .+ was stopping/);

    await spanRow(page, "ATTEMPT", "attempt 1").click();
    await expect.poll(() => page.locator("[data-testid=panel-reason]").textContent()).toMatch(/^Interrupted: worker stopped handed back:/);
    expect(await page.locator("[data-testid=panel-facts]").textContent()).toContain("outcomeHANDED_BACK");
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await screenshot(page, "trace-interrupted");
    expect(errors).toEqual([]);
    await page.close();
  }, 150_000);
});
