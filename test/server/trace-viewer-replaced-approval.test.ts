// The trace viewer's waiting banner when the request a call waits on is replaced by another under
// the same tool call id (new arguments, a new expiry): the banner shows the request that waits
// now, and Approve decides that one. In headless Chromium; needs Debian's chromium.
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import { admit, expectType } from "../support/fixtures.js";
import { haveChromium, launchChromium, openViewer, startViewerServer, type ViewerServer, waitTool } from "../support/viewer-browser.js";
import { waitUntil } from "../support/wait.js";

describe.runIf(haveChromium)("the trace viewer's waiting banner after a request was replaced", () => {
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

  it("shows the new request's arguments, and Approve decides it", async () => {
    app = await startViewerServer(
      [{ toolCalls: [{ name: "deploy", arguments: { target: "production" } }] }, { content: "Deployed." }],
      [waitTool("deploy", 10)],
      {
        approvals: { rules: { deploy: "always" } },
      },
    );
    const client = app.t.as(app.key);
    const { run } = await admit(client, { question: "Deploy it." });
    await waitUntil(async () => expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run").status === "WAITING" || undefined);
    const { page, errors } = await openViewer(browser, app.url(run.id));
    const call = page.locator("[data-testid=waiting-call]");
    await expect.poll(() => call.count(), { timeout: 15_000 }).toBe(1);
    expect(await call.locator(".args").textContent()).toBe('{"target":"production"}');

    // The request shown is closed and another, with other arguments and a later expiry, waits for the same call.
    const prisma = app.t.app.db.prisma;
    const runId = idOfType(run.id, "Run")!;
    const old = await prisma.toolApproval.findFirstOrThrow({ where: { runId } });
    await prisma.toolApproval.update({ where: { id: old.id }, data: { decision: "REJECT", decidedAt: new Date() } });
    const { id: _id, decision: _decision, decidedAt: _decidedAt, decidedBy: _decidedBy, reason: _reason, startedAt: _startedAt, ...kept } = old;
    const replacement = await prisma.toolApproval.create({
      data: { ...kept, arguments: '{"target":"staging"}', requestedAt: new Date(), expiresAt: new Date(Date.now() + 3_600_000) },
    });

    // The page reads the run again, as it does when an attempt starts or ends.
    await page.evaluate(() => (window as unknown as { refreshRun(): Promise<void> }).refreshRun());
    await expect.poll(() => call.locator(".args").textContent(), { timeout: 15_000 }).toBe('{"target":"staging"}');
    expect(await call.count()).toBe(1);

    await call.locator("[data-testid=approve]").click();
    await expect
      .poll(async () => (await prisma.toolApproval.findUniqueOrThrow({ where: { id: replacement.id } })).decision, { timeout: 15_000 })
      .toBe("APPROVE");
    await page.waitForSelector("body[data-run-status=SUCCEEDED]", { timeout: 30_000 });
    expect(await page.locator("[data-testid=message]").isHidden()).toBe(true);
    expect(errors).toEqual([]);
  });
});
