// The trace viewer keeps following the running model call's text after its output stream ended
// early: the link between instances lost and back (the event bus's gap), which ends the page's
// runOutput subscription with RESYNC_REQUIRED while the run goes on. In headless Chromium against
// a running server; needs Debian's chromium.
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createEventBus } from "../../src/events/topics.js";
import { isSummaryRequest } from "../../src/runtime/memory/summary.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import type { ModelRequest, ModelResponse, ModelStreamEvent } from "../../src/runtime/ports/model.js";
import { admit } from "../support/fixtures.js";
import { haveChromium, launchChromium, openViewer, startViewerServer, type ViewerServer } from "../support/viewer-browser.js";

const FIRST = Array.from({ length: 40 }, (_, i) => `alpha${i} `).join("");
const SECOND = Array.from({ length: 40 }, (_, i) => `beta${i} `).join("");
const LAST = "the end.";

/** A model whose one reply comes in three pieces, the second and third once the test lets them go. */
class PacedModel extends ScriptedModel {
  readonly release: (() => void)[] = [];
  private readonly gates = [0, 1].map(() => new Promise<void>((resolve) => this.release.push(resolve)));

  constructor() {
    super({ name: "paced", steps: [] });
  }

  override async complete(request: ModelRequest, onEvent?: (event: ModelStreamEvent) => void): Promise<ModelResponse> {
    if (isSummaryRequest(request)) return super.complete(request, onEvent);
    onEvent?.({ type: "text", delta: FIRST });
    await this.gates[0];
    onEvent?.({ type: "text", delta: SECOND });
    await this.gates[1];
    onEvent?.({ type: "text", delta: LAST });
    return {
      content: FIRST + SECOND + LAST,
      toolCalls: [],
      usage: { input: 10, output: 10, cached: 0, reasoning: 0 },
      finishReason: "stop",
      model: this.label,
    };
  }
}

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
    for (const release of model?.release ?? []) release();
    await viewer?.close();
    viewer = undefined;
  });

  it("subscribes again after a lost link between instances: the text keeps growing, each character once", async () => {
    const gaps: (() => void)[] = [];
    const events = createEventBus({ eventTarget: new EventTarget(), onGap: (listener) => gaps.push(listener) });
    model = new PacedModel();
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
