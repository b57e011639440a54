// The trace viewer on a steered run, in headless Chromium: the turn whose model request read a
// person's steering input (steerRun) shows a "steered" row with its text, before the model call.
// Screenshot: test-results/trace-steered.png.
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SteerRunDocument } from "../../sdk/generated/graphql.js";
import { admit, expectType } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { gateTool, haveChromium, launchChromium, openViewer, screenshot, startViewerServer, type ViewerServer } from "../support/viewer-browser.js";

describe.runIf(haveChromium)("the trace viewer on a steered run", () => {
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

  it("shows the steering input on the turn that delivered it", async () => {
    let open = () => {};
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    app = await startViewerServer([{ toolCalls: [{ name: "gate", arguments: {} }] }, { content: "Answered for 2025." }], [gateTool("gate", opened)]);
    const client = app.t.as(app.key);
    const { run } = await admit(client, { question: "Which sources?" });
    // The run cannot reach its second model request before the gate opens: the input is read there.
    expectType((await client.request(SteerRunDocument, { input: { runId: run.id, text: "Only sources from 2025." } })).steerRun, "SteerRunSuccess");
    open();
    expect((await settled(client, run.id)).status).toBe("SUCCEEDED");

    const { page, errors } = await openViewer(browser, app.url(run.id));
    await page.waitForSelector("body[data-run-status=SUCCEEDED]", { timeout: 15_000 });
    const steered = page.locator(".event-row.STEERED");
    await expect.poll(() => steered.count()).toBe(1);
    expect(await steered.textContent()).toContain("steered");
    expect(await steered.textContent()).toContain("Only sources from 2025.");
    await screenshot(page, "trace-steered");
    expect(errors).toEqual([]);
  }, 60_000);
});
