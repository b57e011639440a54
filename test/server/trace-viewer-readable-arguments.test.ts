// The trace viewer shows a tool call's arguments as the tool gets them wherever it shows them, in
// headless Chromium: a held call's in the waiting banner, its row of the tree and the details of
// its span, each with the server's warnings (ToolApproval.readableArguments), and another call's in
// the tree. A ⚠ the model wrote is shown as its escape, so it cannot pass for the page's mark, and a
// long run of blanks as its count, so it cannot push "rm -rf ~" out of view.
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DecideToolCallDocument, RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import { argumentWarnings, readableArguments } from "../../sdk/readable-arguments.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { admit, expectType } from "../support/fixtures.js";
import { haveChromium, launchChromium, openViewer, screenshot, startViewerServer, type ViewerServer } from "../support/viewer-browser.js";
import { waitUntil } from "../support/wait.js";

const commandTool = (name: string, received: unknown[]): Tool => ({
  schema: { name, description: "runs a command", parameters: { type: "object", properties: { command: { type: "string" }, note: { type: "string" } } } },
  execute: async (args) => {
    received.push(args);
    return "ran";
  },
});

describe.runIf(haveChromium)("the trace viewer on a call's arguments", () => {
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

  it("shows them as the tool gets them in the banner, the tree and the details, with the warnings, and a ⚠ of their own as its escape", async () => {
    // "rm" written as escapes after sixty spaces, a ⚠ of the model's own (written as an escape), an unassigned and a private-use code point.
    const held = `{"command":"echo \\u26A0 safe${" ".repeat(60)}; \\u0072\\u006d -rf ~","note":"x\u0378\uE000"}`;
    const plain = String.raw`{"command":"\u0065cho ok"}`;
    const received: unknown[] = [];
    app = await startViewerServer(
      [
        {
          toolCalls: [
            { name: "echo", arguments: plain },
            { name: "shell", arguments: held },
          ],
        },
        { content: "Done." },
      ],
      [commandTool("shell", received), commandTool("echo", received)],
      { approvals: { rules: { shell: "always" } } },
    );
    const client = app.t.as(app.key);
    const { run } = await admit(client, { question: "Clean up." });
    const waiting = await waitUntil(async () => {
      const current = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return current.status === "WAITING" ? current : undefined;
    });
    const [approval] = waiting.pendingApprovals.edges.map((edge) => edge.node);
    const readable = readableArguments(held);
    const expected = String.raw`{"command":"echo \u26A0 safe⚠[60 spaces]; rm -rf ~","note":"x\u0378\uE000"}`;
    expect(readable.text).toBe(expected);
    expect(approval!.readableArguments.text).toBe(expected);
    const warnings = argumentWarnings(readable);
    // Hidden characters, escaped ones (rm), a run of blanks and a ⚠ of their own.
    expect(warnings).toHaveLength(4);

    const { page, errors } = await openViewer(browser, app.url(run.id));
    await page.waitForSelector("body[data-run-status=WAITING]", { timeout: 15_000 });
    // The banner.
    const call = page.locator("[data-testid=waiting-call]");
    await expect.poll(() => call.count()).toBe(1);
    const args = call.locator(".args");
    expect(await args.textContent()).toBe(expected);
    expect(await args.locator(".blank-run").allTextContents()).toEqual(["⚠[60 spaces]"]);
    expect(await args.locator(".hidden-char").allTextContents()).toEqual(["\\u26A0", "\\u0378", "\\uE000"]);
    expect(await call.locator("[data-testid=arguments-warning]").allTextContents()).toEqual(warnings.map((text) => `⚠ ${text}`));
    // The held call's row of the tree, and the other call's, read as the tool gets them.
    const rows = page.locator("[data-testid=event][data-kind=TOOL_INPUT]");
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(2);
    const heldRow = rows.filter({ hasText: "rm -rf" });
    expect(await heldRow.locator(".preview").textContent()).toBe(expected);
    expect(await heldRow.locator("[data-testid=arguments-warning]").getAttribute("title")).toBe(warnings.join("\n"));
    const plainRow = rows.filter({ hasText: "ok" });
    expect(await plainRow.locator(".preview").textContent()).toBe('{"command":"echo ok"}');
    expect(await plainRow.locator("[data-testid=arguments-warning]").count()).toBe(0);
    await screenshot(page, "trace-waiting-readable-arguments");
    // The details of the held call's span: as the tool gets them with the warnings, above what the model wrote.
    await call.locator("code").click();
    const input = page.locator("[data-testid=panel-event][data-kind=TOOL_INPUT]");
    await expect.poll(() => input.count()).toBe(1);
    expect(await input.locator("[data-testid=readable-arguments]").textContent()).toBe(expected);
    expect(await input.locator("[data-testid=arguments-warning]").allTextContents()).toEqual(warnings.map((text) => `⚠ ${text}`));
    expect(await input.textContent()).toContain("\\u0072\\u006d");

    expectType(
      (await client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" } })).decideToolCall,
      "DecideToolCallSuccess",
    );
    await page.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 15_000 });
    // Each call ran with its arguments as they were shown decoded.
    expect(received.map((value) => JSON.stringify(value)).sort()).toEqual([JSON.stringify(JSON.parse(plain)), JSON.stringify(JSON.parse(held))].sort());
    expect(errors).toEqual([]);
  });
});
