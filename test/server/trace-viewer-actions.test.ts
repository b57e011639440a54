// Acting on a run from the trace viewer, in headless Chromium: Stop ends a running run
// (CANCELLED shown), Approve lets a held tool call execute and Reject (with a reason) answers it
// with the person's reason instead — each visible in the answer; Pause and Resume pause a run and go on. The buttons show only for a key
// or token that may act: a key without the DECIDE scope has no Approve/Reject, a token without
// CANCEL no Stop, and a token no reason's box on a run an API key admitted (a reason steers the run).
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type AccessOperation, CreateAccessTokenDocument, CreateApiKeyDocument } from "../../sdk/generated/graphql.js";
import type { DossierClient } from "../../sdk/client.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { callTools, toolCallingModel } from "../support/scripted-runs.js";
import { haveChromium, launchChromium, openViewer, startViewerServer, type ViewerServer, waitTool } from "../support/viewer-browser.js";

async function tokenFor(client: DossierClient, runId: string, operations: AccessOperation[]) {
  const result = await client.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: runId, operations }] } });
  return expectType(result.createAccessToken, "CreateAccessTokenSuccess").token;
}

const status = (page: Page, value: string) => page.waitForSelector(`body[data-run-status=${value}]`, { timeout: 20_000 });

describe.runIf(haveChromium)("acting on a run from the trace viewer", () => {
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

  async function start() {
    app = await startViewerServer(toolCallingModel("viewer"), [waitTool("deploy", 10), waitTool("slow", 60_000)], {
      approvals: { rules: { deploy: "always" } },
    });
    return { app, client: app.t.as(app.key) };
  }
  const viewerUrl = (runId: string, hash: string) => `http://127.0.0.1:${app!.server.port}/traces/${encodeURIComponent(runId)}#${hash}`;

  it("Stop cancels a running run; a token without CANCEL shows no Stop", async () => {
    const { client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "slow", arguments: {} }) });

    const readOnly = await openViewer(browser, viewerUrl(run.id, `token=${await tokenFor(client, run.id, ["READ", "SUBSCRIBE"])}`));
    await status(readOnly.page, "RUNNING");
    await readOnly.page.waitForSelector("[data-testid=span][data-kind=TOOL_CALL]", { timeout: 15_000 });
    expect(await readOnly.page.locator("[data-testid=stop]").isHidden()).toBe(true);

    const { page, errors } = await openViewer(browser, viewerUrl(run.id, `token=${await tokenFor(client, run.id, ["READ", "SUBSCRIBE", "CANCEL"])}`));
    await status(page, "RUNNING");
    const stop = page.locator("[data-testid=stop]");
    await stop.waitFor({ state: "visible" });
    await page.locator("[data-testid=stop-mode]").selectOption("NOW");
    await stop.click();
    await status(page, "CANCELLED");
    expect(await page.locator("[data-testid=failure]").textContent()).toContain("Cancelled");
    expect(await stop.isHidden()).toBe(true);
    expect(await page.locator("[data-testid=stop-mode]").isHidden()).toBe(true);
    // The stop asked for shows with its mode.
    await expect.poll(() => page.locator("[data-testid=stop-request]").textContent()).toBe("stop requested: NOW");
    // The read-only page follows the run to its end as well.
    await status(readOnly.page, "CANCELLED");
    expect(errors).toEqual([]);
    expect(readOnly.errors).toEqual([]);
  }, 60_000);

  it("Approve lets the held call run; Reject answers it with the reason typed; a key without DECIDE shows neither", async () => {
    const { app, client } = await start();
    const approved = (await admit(client, { question: callTools({ name: "deploy", arguments: { target: "staging" } }) })).run;
    const rejected = (await admit(client, { question: callTools({ name: "deploy", arguments: { target: "production" } }) })).run;

    // A key of the same principal whose scopes lack DECIDE sees the waiting call but no buttons.
    const created = await client.request(CreateApiKeyDocument, { input: { name: "watcher", scopes: ["READ", "SUBSCRIBE", "CANCEL"] } });
    const watcherKey = expectType(created.createApiKey, "CreateApiKeySuccess").secret;
    const watcher = await openViewer(browser, viewerUrl(approved.id, `key=${encodeURIComponent(watcherKey)}`));
    await status(watcher.page, "WAITING");
    await expect.poll(() => watcher.page.locator("[data-testid=waiting-call]").count()).toBe(1);
    expect(await watcher.page.locator("[data-testid=approve], [data-testid=reject]").count()).toBe(0);
    expect(await watcher.page.locator("[data-testid=stop]").isVisible()).toBe(true);

    const first = await openViewer(browser, viewerUrl(approved.id, `key=${encodeURIComponent(app.key)}`));
    await status(first.page, "WAITING");
    await first.page.locator("[data-testid=approve]").click();
    await status(first.page, "SUCCEEDED");
    expect(await first.page.locator("[data-testid=answer]").textContent()).toBe("deploy waited 10 ms");
    expect(await first.page.locator("[data-testid=waiting]").isHidden()).toBe(true);
    await status(watcher.page, "SUCCEEDED");

    // A reason is the model's next input: an access token gives one only on a run it may steer
    // (token-directs-own-runs.test.ts), so this key's run is rejected with one through the key.
    const second = await openViewer(browser, viewerUrl(rejected.id, `key=${encodeURIComponent(app.key)}`));
    await status(second.page, "WAITING");
    await second.page.locator("[data-testid=reject-reason]").fill("not on a Friday");
    await second.page.locator("[data-testid=reject]").click();
    await status(second.page, "SUCCEEDED");
    const answer = await second.page.locator("[data-testid=answer]").textContent();
    expect(answer).toMatch(/declined this call of "deploy"\. Reason: not on a Friday\./);
    expect(answer).not.toContain("deploy waited");
    expect([...first.errors, ...second.errors, ...watcher.errors]).toEqual([]);
  }, 90_000);

  it("a token's page offers a reason only on a run it may steer: none on the key's run, which it rejects without one", async () => {
    const { app, client } = await start();
    const workspace = await createWorkspace(client, "A page's research");
    const minted = await client.request(CreateAccessTokenDocument, {
      input: { grants: [{ resourceId: workspace.id, operations: ["READ", "SUBSCRIBE", "ADMIT", "DECIDE"] }] },
    });
    const token = expectType(minted.createAccessToken, "CreateAccessTokenSuccess").token;
    const question = callTools({ name: "deploy", arguments: { target: "production" } });
    const keys = (await admit(client, { workspaceId: workspace.id, question })).run;
    const own = (await admit(app.t.as(token), { workspaceId: workspace.id, question })).run;

    // The key's run reads every publication of the principal: a reason, the model's next input, would steer it for the token.
    const onKeys = await openViewer(browser, viewerUrl(keys.id, `token=${token}`));
    await status(onKeys.page, "WAITING");
    await expect.poll(() => onKeys.page.locator("[data-testid=waiting-call]").count()).toBe(1);
    expect(await onKeys.page.locator("[data-testid=approve], [data-testid=reject]").count()).toBe(2);
    expect(await onKeys.page.locator("[data-testid=reject-reason]").count()).toBe(0);
    await onKeys.page.locator("[data-testid=reject]").click();
    await status(onKeys.page, "SUCCEEDED");
    expect(await onKeys.page.locator("[data-testid=answer]").textContent()).toMatch(/declined this call of "deploy"\. Reason: none given\./);

    const onOwn = await openViewer(browser, viewerUrl(own.id, `token=${token}`));
    await status(onOwn.page, "WAITING");
    await onOwn.page.locator("[data-testid=reject-reason]").fill("not today");
    await onOwn.page.locator("[data-testid=reject]").click();
    await status(onOwn.page, "SUCCEEDED");
    expect(await onOwn.page.locator("[data-testid=answer]").textContent()).toMatch(/declined this call of "deploy"\. Reason: not today\./);
    expect([...onKeys.errors, ...onOwn.errors]).toEqual([]);
  }, 90_000);

  it("Pause pauses a waiting run and Resume makes it wait again; the held call is then approved", async () => {
    const { app, client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "deploy", arguments: { target: "staging" } }) });
    const { page, errors } = await openViewer(browser, viewerUrl(run.id, `key=${encodeURIComponent(app.key)}`));
    await status(page, "WAITING");
    const pause = page.locator("[data-testid=pause]");
    expect(await pause.textContent()).toBe("Pause");
    await pause.click();
    await status(page, "PAUSED");
    await expect.poll(() => pause.textContent()).toBe("Resume");
    await pause.click();
    await status(page, "WAITING");
    await page.locator("[data-testid=approve]").click();
    await status(page, "SUCCEEDED");
    expect(await pause.isHidden()).toBe(true);
    expect(errors).toEqual([]);
  }, 60_000);
});
