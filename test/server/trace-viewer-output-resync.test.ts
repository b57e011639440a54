// The trace viewer keeps following the running model call's text after its output stream ended
// early: the link between instances lost and back (the event bus's gap), which ends the page's
// runOutput subscription with RESYNC_REQUIRED while the run goes on. In headless Chromium against
// a running server; needs Debian's chromium.
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createEventBus } from "../../src/events/topics.js";
import { admit } from "../support/fixtures.js";
import { PacedModel } from "../support/paced-model.js";
import { haveChromium, launchChromium, openViewer, startViewerServer, type ViewerServer } from "../support/viewer-browser.js";

const FIRST = Array.from({ length: 40 }, (_, i) => `alpha${i} `).join("");
const SECOND = Array.from({ length: 40 }, (_, i) => `beta${i} `).join("");
const LAST = "the end.";

const liveText = "[data-testid=span][data-kind=MODEL_CALL] [data-testid=live-output] pre";

describe.runIf(haveChromium)("the trace viewer's live model output after its stream ended early, in Chromium", () => {
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

  it("subscribes again after a lost link between instances: the text keeps growing, each character once", { timeout: 120_000 }, async () => {
    const gaps: (() => void)[] = [];
    const events = createEventBus({ eventTarget: new EventTarget(), onGap: (listener) => gaps.push(listener) });
    model = new PacedModel([FIRST, SECOND, LAST]);
    viewer = await startViewerServer(model, [], { events });
    const { run } = await admit(viewer.t.as(viewer.key), { question: "Write at length" });
    const { page, errors } = await openViewer(browser, viewer.url(run.id));
    await page.waitForSelector("body[data-connection=live]", { timeout: 15_000 });
    await page.waitForFunction(([selector, text]) => document.querySelector(selector!)?.textContent === text, [liveText, FIRST], { timeout: 15_000 });

    // The link is lost and back: the page's output stream ends (RESYNC_REQUIRED) while the call goes on.
    for (const gap of gaps) gap();
    model.release[0]!();
    await page.waitForFunction(([selector, text]) => document.querySelector(selector!)?.textContent === text, [liveText, FIRST + SECOND], {
      timeout: 15_000,
    });
    expect(await page.textContent(liveText)).toBe(FIRST + SECOND);
    expect(await page.getAttribute("body", "data-connection")).toBe("live");

    model.release[1]!();
    await page.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 30_000 });
    expect(await page.textContent("[data-testid=answer]")).toBe(FIRST + SECOND + LAST);
    expect(await page.locator("[data-testid=live-output]").count()).toBe(0);
    expect(errors).toEqual([]);
  });
});
