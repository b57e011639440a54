// The trace viewer shows the running model call's text growing (runOutput), in headless Chromium
// against a running server, and the answer once the call has ended. Needs Debian's chromium.
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { admit } from "../support/fixtures.js";
import {
  gateTool,
  haveChromium,
  horizontalOverflow,
  launchChromium,
  openViewer,
  PHONE,
  screenshot,
  startViewerServer,
  type ViewerServer,
} from "../support/viewer-browser.js";

const ANSWER = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ");

describe.runIf(haveChromium)("the trace viewer's live model output, in Chromium", () => {
  let browser: Browser;
  let viewer: ViewerServer | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => browser?.close());
  afterEach(async () => {
    await viewer?.close();
    viewer = undefined;
  });

  it("shows the running model call's text as it grows, then the answer once the call ended", async () => {
    let open = () => {};
    viewer = await startViewerServer(
      [{ toolCalls: [{ name: "gate", arguments: {} }] }, { content: ANSWER, streamMs: 3_000 }],
      [gateTool("gate", new Promise<void>((resolve) => (open = resolve)))],
    );
    const { run } = await admit(viewer.t.as(viewer.key), { question: "Write sixty words" });
    const { page, errors } = await openViewer(browser, viewer.url(run.id), PHONE);
    await page.waitForSelector("body[data-connection=live]", { timeout: 15_000 });
    open();

    const live = page.locator('[data-testid=span][data-kind="MODEL_CALL"] [data-testid=live-output] pre');
    await live.waitFor({ timeout: 15_000 });
    const early = (await live.textContent())!;
    await page.waitForFunction((seen) => (document.querySelector("[data-testid=live-output] pre")?.textContent ?? "").length > seen + 20, early.length, {
      timeout: 15_000,
    });
    const later = (await live.textContent())!;
    expect(ANSWER.startsWith(early)).toBe(true);
    expect(ANSWER.startsWith(later)).toBe(true);
    expect(later.length).toBeLessThan(ANSWER.length);
    expect(await horizontalOverflow(page)).toBe(0); // long text wraps, also on a phone
    await screenshot(page, "trace-viewer-live-output");

    await page.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 30_000 });
    expect(await page.locator("[data-testid=live-output]").count()).toBe(0);
    expect(await page.textContent("[data-testid=answer]")).toBe(ANSWER);
    expect(errors).toEqual([]);
  });
});
