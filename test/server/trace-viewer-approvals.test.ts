// The trace viewer on a run that waits for a person's decision, in headless Chromium: the badge
// says WAITING, a banner lists the waiting call (tool, arguments, expiry) and leads to its span's
// APPROVAL_REQUESTED event; once decided, the banner goes, the span's details show the decision
// (APPROVAL_DECIDED) and the run goes on live. Screenshot: test-results/trace-waiting.png.
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DecideToolCallDocument, RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import type { ScriptStep } from "../../src/runtime/adapters/scripted-model.js";
import { admit, expectType } from "../support/fixtures.js";
import { haveChromium, launchChromium, openViewer, screenshot, startViewerServer, type ViewerServer, waitTool } from "../support/viewer-browser.js";
import { waitUntil } from "../support/wait.js";

describe.runIf(haveChromium)("the trace viewer on a run waiting for a decision", () => {
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

  it("shows the waiting call, leads to its span, and goes on live once it is decided", async () => {
    const steps: ScriptStep[] = [
      {
        toolCalls: [
          { name: "deploy", arguments: { target: "production" } },
          { name: "check", arguments: { ms: 20 } },
        ],
      },
      { content: "Deployed after approval." },
    ];
    app = await startViewerServer(steps, [waitTool("deploy", 10), waitTool("check", 20)], { approvals: { rules: { deploy: "always" } } });
    const client = app.t.as(app.key);
    const { run } = await admit(client, { question: "Deploy it." });
    const held = await waitUntil(async () => {
      const current = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return current.status === "WAITING" ? current : undefined;
    });

    const { page, errors } = await openViewer(browser, app.url(run.id));
    await page.waitForSelector("body[data-run-status=WAITING]", { timeout: 15_000 });
    const call = page.locator("[data-testid=waiting-call]");
    await expect.poll(() => call.count()).toBe(1);
    expect(await call.textContent()).toContain("deploy");
    expect(await call.textContent()).toContain('{"target":"production"}');
    // The attempt that ended to wait was not interrupted.
    expect(await page.locator("[data-testid=interruptions]").isHidden()).toBe(true);
    await screenshot(page, "trace-waiting");
    await call.locator("code").click();
    await expect.poll(() => page.locator("[data-testid=panel]").textContent()).toContain("approval requested");

    const decided = await client.request(DecideToolCallDocument, {
      input: { runId: run.id, toolCallId: held.pendingApprovals.edges.map((edge) => edge.node)[0]!.toolCallId, decision: "APPROVE" },
    });
    expectType(decided.decideToolCall, "DecideToolCallSuccess");
    await page.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 15_000 });
    expect(await page.locator("[data-testid=waiting]").isHidden()).toBe(true);
    expect(await page.locator("[data-testid=answer]").textContent()).toBe("Deployed after approval.");
    // The details of the call's span, still open, show the decision as it came.
    const decision = page.locator("[data-testid=panel-event][data-kind=APPROVAL_DECIDED]");
    await expect.poll(() => decision.count()).toBe(1);
    expect(await decision.textContent()).toContain("approval decided");
    expect(await decision.textContent()).toContain('"decision":"APPROVE"');
    expect(errors).toEqual([]);
  });
});
