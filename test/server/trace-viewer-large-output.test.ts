// The trace viewer on a model call that writes a lot (over a megabyte): the page shows the last
// 16,384 characters of its text and how many came before, in one element kept while the text
// grows (each delta appended), instead of drawing all of it anew at every render. In headless
// Chromium against a running server; needs Debian's chromium.
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { admit } from "../support/fixtures.js";
import { PacedModel } from "../support/paced-model.js";
import { haveChromium, launchChromium, openViewer, startViewerServer, type ViewerServer } from "../support/viewer-browser.js";

const TAIL = 16_384;
const line = (i: number) => `line ${String(i).padStart(6, "0")} of a long report\n`;
const FIRST = Array.from({ length: 40_000 }, (_, i) => line(i)).join("");
const SECOND = Array.from({ length: 100 }, (_, i) => line(40_000 + i)).join("");
const LAST = "The end.";

const pre = "[data-testid=span][data-kind=MODEL_CALL] [data-testid=live-output] pre";
const earlier = "[data-testid=span][data-kind=MODEL_CALL] [data-testid=live-output] [data-testid=live-output-earlier]";

describe.runIf(haveChromium)("the trace viewer's live output of a long reply, in Chromium", () => {
  let browser: Browser;
  let viewer: ViewerServer | undefined;
  let model: PacedModel | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => browser?.close());
  afterEach(async () => {
    model?.releaseAll();
    await viewer?.close();
    viewer = undefined;
  });

  it("shows the last 16,384 characters and how many came before, in the same element as it grows", { timeout: 180_000 }, async () => {
    expect(FIRST.length).toBeGreaterThan(1_000_000);
    model = new PacedModel([FIRST, SECOND, LAST]);
    viewer = await startViewerServer(model);
    const { run } = await admit(viewer.t.as(viewer.key), { question: "Write a long report" });
    const { page, errors } = await openViewer(browser, viewer.url(run.id));
    const endsWith = (text: string) =>
      page.waitForFunction(([selector, end]) => (document.querySelector(selector!)?.textContent ?? "").endsWith(end!), [pre, text.slice(-200)], {
        timeout: 90_000,
      });
    await endsWith(FIRST);
    const shown = await page.$(pre);
    expect(await page.textContent(pre)).toBe(FIRST.slice(-TAIL));
    expect(await page.textContent(earlier)).toBe(`${(FIRST.length - TAIL).toLocaleString("en-US")} earlier characters · `);

    model.release[0]!();
    await endsWith(SECOND);
    // The same element, its text grown by the delta and cut at the front.
    expect(await page.evaluate(([element, selector]) => element === document.querySelector(selector as string), [shown, pre] as const)).toBe(true);
    expect(await page.textContent(pre)).toBe((FIRST + SECOND).slice(-TAIL));
    expect(await page.textContent(earlier)).toBe(`${(FIRST.length + SECOND.length - TAIL).toLocaleString("en-US")} earlier characters · `);
    expect(await page.locator("[data-testid=live-output]").count()).toBe(1);

    model.release[1]!();
    await page.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 30_000 });
    expect(await page.locator("[data-testid=live-output]").count()).toBe(0);
    expect(await page.textContent("[data-testid=answer]")).toBe(FIRST + SECOND + LAST);
    expect(errors).toEqual([]);
  });
});
