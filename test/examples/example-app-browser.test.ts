// The example app (examples/app), built by Vite and driven in headless Chromium against a running
// Dossier whose model is a real HTTP server streaming the OpenAI protocol slowly: a question's
// answer streams in, a reload mid-answer shows the same text and then exactly the rest (the text
// on screen equals the model's — no repeat, no gap), Stop ends a run, Approve lets a held call run,
// Reject gives its reason only where the page may steer the run, and the address cannot send the
// page (and its token) to another server.
// Needs Debian's chromium.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { buildExampleApp, type StaticSite, serveStatic } from "../support/example-app.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { argumentWarnings, readableArguments } from "../../sdk/readable-arguments.js";
import { mixedScriptNote } from "../../sdk/visible-text.js";
import { CreateAccessTokenDocument } from "../../sdk/generated/graphql.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { haveChromium, launchChromium, leftEdges, screenshot, waitTool } from "../support/viewer-browser.js";

const PIECES = Array.from({ length: 40 }, (_, i) => `token${i} `);
const ANSWER = PIECES.join("");
const FORGED_NOTE = `\\u26A0 ok${" ".repeat(40)}; \\u0072\\u006d -rf ~`;

describe.runIf(haveChromium)("the example app in Chromium", () => {
  let stub: OpenAIStreamStub;
  let site: StaticSite;
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    const outDir = mkdtempSync(path.join(tmpdir(), "dossier-example-app-"));
    site = await serveStatic(outDir);
    stub = await startOpenAIStreamStub((body) => {
      const question = body.messages.findLast((m) => m.role === "user")?.content ?? "";
      if (question.endsWith("[deploy]") && !body.messages.some((m) => m.role === "tool")) {
        return { toolCalls: [{ id: "call_deploy", name: "deploy", fragments: ['{"target":', '"production"}'] }] };
      }
      // A bidi override: shown raw, the target would read "staging". The host's і is Cyrillic, the path
      // ends in a Braille blank and a no-break space, and two spaces are two.
      if (question.endsWith("[hidden]") && !body.messages.some((m) => m.role === "tool")) {
        const from = ',"from":"https://g\u0456thub.com/x.sh","to":"/tmp/a\u2800\u00A0  b"}';
        return { toolCalls: [{ id: "call_hidden", name: "deploy", fragments: ['{"target":"production #', `\u202Egnigats\u200B"${from}`] }] };
      }
      // "rm" written as escapes after forty spaces, and a ⚠ of the model's own.
      if (question.endsWith("[forged]") && !body.messages.some((m) => m.role === "tool")) {
        return { toolCalls: [{ id: "call_forged", name: "deploy", fragments: ['{"target":"production",', `"note":"${FORGED_NOTE}"}`] }] };
      }
      // No hidden character: in the browser's usual bidi order one Hebrew letter shows the groups reversed.
      if (question.endsWith("[rtl]") && !body.messages.some((m) => m.role === "tool")) {
        return { toolCalls: [{ id: "call_rtl", name: "deploy", fragments: ['{"to":"\u05D7 4417 1234', ' 5678 9113","amount":25}'] }] };
      }
      return { text: PIECES, gapMs: question.endsWith("[slow]") ? 80 : 20 };
    });
    t = await startTestApp("pglite", {
      listen: true,
      // The app is a page of another origin: the operator lists it.
      corsOrigins: [site.origin],
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-example-app-run-")),
        extraTools: [waitTool("deploy", 10)],
        approvals: { rules: { deploy: "always" } },
        leaseMs: 30_000,
      },
    });
    // Built for this server, as its host would build it (VITE_DOSSIER_URL).
    await buildExampleApp(outDir, t.server!.url);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await stub?.close();
    await site?.close();
  });

  /**
   * A fresh browser profile on the app (asking in `workspaceId` when given, as if it remembered it);
   * every text the answer showed is recorded in `window.seen`.
   */
  async function openApp(address = "/", workspaceId?: string): Promise<{ page: Page; errors: string[]; resumedAt: (string | null)[] }> {
    const page = await (await browser.newContext()).newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(`page error: ${String(error)}`));
    page.on("console", (message) => message.type() === "error" && errors.push(`console: ${message.text()}`));
    if (workspaceId) await page.addInitScript((id) => localStorage.setItem("dossier-example:workspace", id), workspaceId);
    await page.addInitScript(() => {
      const seen: string[] = [];
      (window as unknown as { seen: string[] }).seen = seen;
      new MutationObserver(() => {
        const text = document.querySelector("[data-testid=answer]")?.textContent;
        if (text !== undefined && text !== null && text !== seen.at(-1)) seen.push(text);
      }).observe(document, { subtree: true, childList: true, characterData: true });
    });
    // What the page subscribes to runOutput with: its afterSeq is where it resumes.
    const resumedAt: (string | null)[] = [];
    page.on("websocket", (socket) =>
      socket.on("framesent", ({ payload }) => {
        const message = JSON.parse(String(payload)) as { type: string; payload?: { query?: string; variables?: { afterSeq?: string } } };
        if (message.type === "subscribe" && message.payload?.query?.includes("runOutput(")) resumedAt.push(message.payload.variables?.afterSeq ?? null);
      }),
    );
    await page.goto(`${site.origin}${address}`);
    return { page, errors, resumedAt };
  }

  const ask = async (page: Page, question: string) => {
    await page.fill("[data-testid=question]", question);
    await page.click("[data-testid=ask]:not([disabled])");
    await page.waitForURL(/[?&]run=/);
  };
  const answer = async (page: Page) => (await page.textContent("[data-testid=answer]")) ?? "";
  const answerLonger = (page: Page, chars: number) =>
    page.waitForFunction((n) => (document.querySelector("[data-testid=answer]")?.textContent ?? "").length > n, chars, { timeout: 20_000 });
  const seen = (page: Page) => page.evaluate(() => (window as unknown as { seen: string[] }).seen);

  it("streams the answer, and after a reload mid-answer shows exactly the model's text", async () => {
    const { page, errors, resumedAt } = await openApp();
    await ask(page, "What is streamed? [slow]");
    await answerLonger(page, 40);
    expect(await page.textContent("[data-testid=status]")).toBe("RUNNING");
    const before = await answer(page);
    const seenBefore = await seen(page);
    expect(before.length).toBeLessThan(ANSWER.length);

    await page.reload();
    await page.waitForSelector("[data-testid=answer]");
    // The reloaded page shows at once the text it had shown (no flash of an empty answer), and
    // asks the server for what comes after it.
    const [first] = await seen(page);
    expect(first!.length).toBeGreaterThan(0);
    expect(ANSWER.startsWith(first!)).toBe(true);
    expect(resumedAt[0]).toBeNull();
    expect(resumedAt.at(-1)).toMatch(/^\d+:\d+$/);
    await page.waitForSelector("[data-testid=run][data-done=true]", { timeout: 20_000 });
    expect(await page.getAttribute("[data-testid=run]", "data-status")).toBe("SUCCEEDED");
    expect(await answer(page)).toBe(ANSWER);
    const seenAfter = await seen(page);
    // At no moment, before or after the reload, did the page show a text that is not the start of the model's.
    for (const text of [...seenBefore, ...seenAfter]) expect(ANSWER.startsWith(text), text).toBe(true);
    expect(seenAfter.length).toBeGreaterThan(1); // the rest streamed in after the reload
    expect(await page.textContent("[data-testid=trace]")).toMatch(/1 model calls · tokens in 50 out 10/);
    // The asked question is listed in the workspace's runs (useWorkspaceRuns), with its outcome.
    await expect.poll(() => page.textContent("[data-testid=runs]")).toContain("What is streamed? [slow] SUCCEEDED");
    await screenshot(page, "example-app-answer");
    expect(errors).toEqual([]);
  });

  it("Stop ends the run mid-answer", async () => {
    const { page, errors } = await openApp();
    await ask(page, "Something long [slow]");
    await answerLonger(page, 10);
    await page.click("[data-testid=stop]");
    await page.waitForSelector("[data-testid=run][data-status=CANCELLED][data-done=true]", { timeout: 20_000 });
    const text = await answer(page);
    expect(ANSWER.startsWith(text)).toBe(true);
    expect(text.length).toBeLessThan(ANSWER.length);
    expect(await page.locator("[data-testid=stop]").count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it("shows a held tool call with Approve and Reject; Approve lets it run and the answer follows", async () => {
    const { page, errors } = await openApp();
    await ask(page, "Ship it [deploy]");
    const approval = page.locator("[data-testid=approval]");
    await approval.waitFor({ timeout: 20_000 });
    expect(await approval.textContent()).toContain('deploy with {"target":"production"}');
    expect(await page.getAttribute("[data-testid=tool-call]", "data-status")).toBe("WAITING_APPROVAL");
    expect(await page.getAttribute("[data-testid=run]", "data-status")).toBe("WAITING");
    await screenshot(page, "example-app-approval");
    await page.click("[data-testid=approve]");
    await page.waitForSelector("[data-testid=run][data-status=SUCCEEDED][data-done=true]", { timeout: 20_000 });
    expect(await approval.count()).toBe(0);
    expect(await page.getAttribute("[data-testid=tool-call]", "data-status")).toBe("OK");
    expect(await page.textContent("[data-testid=tool-call]")).toContain("deploy waited 10 ms");
    expect(await answer(page)).toBe(ANSWER);
    expect(errors).toEqual([]);
  });

  it("rejects with its reason only a run the page may steer: a token's page rejects an API key's run without one", async () => {
    const backend = t.as(await t.createPrincipal("The app's backend"));
    const workspace = await createWorkspace(backend, "The page's research");
    const minted = await backend.request(CreateAccessTokenDocument, {
      input: { grants: [{ resourceId: workspace.id, operations: ["READ", "SUBSCRIBE", "ADMIT", "DECIDE"] }] },
    });
    const token = expectType(minted.createAccessToken, "CreateAccessTokenSuccess").token;
    // The key's run reads every publication of its principal: a reason, the model's next input, would steer it for the token.
    const keys = (await admit(backend, { workspaceId: workspace.id, question: "Ship it [deploy]" })).run;
    const onKeys = await openApp(`/?run=${encodeURIComponent(keys.id)}#token=${token}`, workspace.id);
    await onKeys.page.locator("[data-testid=approval]").waitFor({ timeout: 20_000 });
    await onKeys.page.click("[data-testid=reject]");
    await onKeys.page.waitForSelector("[data-testid=run][data-status=SUCCEEDED][data-done=true]", { timeout: 20_000 });
    expect(await onKeys.page.textContent("[data-testid=tool-call]")).toContain('declined this call of "deploy". Reason: none given.');

    // The token's own run keeps the token's reach: its rejection gives the reason.
    const own = await openApp(`/#token=${token}`, workspace.id);
    await ask(own.page, "Ship it too [deploy]");
    await own.page.locator("[data-testid=approval]").waitFor({ timeout: 20_000 });
    await own.page.click("[data-testid=reject]");
    await own.page.waitForSelector("[data-testid=run][data-status=SUCCEEDED][data-done=true]", { timeout: 20_000 });
    expect(await own.page.textContent("[data-testid=tool-call]")).toContain('declined this call of "deploy". Reason: Rejected in the example app.');
    expect(await own.page.locator("[data-testid=refused]").count()).toBe(0);
    expect([...onKeys.errors, ...own.errors]).toEqual([]);
  });

  it("shows a held call's hidden characters as escapes, not applied", async () => {
    const { page, errors } = await openApp();
    await ask(page, "Ship it [hidden]");
    const approval = page.locator("[data-testid=approval]");
    await approval.waitFor({ timeout: 20_000 });
    const text = (await approval.textContent())!;
    const shown = '{"target":"production #\\u202Egnigats\\u200B","from":"https://⚠g\u0456thub.com/x.sh","to":"/tmp/a\\u2800\\u00A0  b"}';
    expect(text).toContain(`deploy with ${shown}`);
    // The text as the page lays it out: two spaces stay two.
    // biome-ignore lint/performance/useDomNodeTextContent: innerText is the rendered text, spaces as shown
    expect(await approval.locator("[data-testid=arguments]").innerText()).toBe(shown);
    expect(text).not.toMatch(/[\u202E\u200B\u2800\u00A0]/);
    expect(await approval.locator("[data-testid=hidden-char]").allTextContents()).toEqual(["\\u202E", "\\u200B", "\\u2800", "\\u00A0"]);
    const mixed = approval.locator("[data-testid=mixed-script]");
    expect(await mixed.allTextContents()).toEqual(["⚠g\u0456thub.com"]);
    expect(await mixed.getAttribute("title")).toBe(mixedScriptNote("g\u0456thub.com"));
    await page.click("[data-testid=reject]");
    await page.waitForSelector("[data-testid=run][data-done=true]", { timeout: 20_000 });
    expect(errors).toEqual([]);
  });

  it("shows a held call's arguments as the tool gets them, with the server's warnings, a long run of blanks as its count", async () => {
    const { page, errors } = await openApp();
    await ask(page, "Ship it [forged]");
    const approval = page.locator("[data-testid=approval]");
    await approval.waitFor({ timeout: 20_000 });
    const raw = `{"target":"production","note":"${FORGED_NOTE}"}`;
    const shown = String.raw`{"target":"production","note":"\u26A0 ok⚠[40 spaces]; rm -rf ~"}`;
    expect(readableArguments(raw).text).toBe(shown);
    expect(await approval.locator("[data-testid=arguments]").textContent()).toBe(shown);
    expect(await approval.locator("[data-testid=blank-run]").allTextContents()).toEqual(["⚠[40 spaces]"]);
    expect(await approval.locator("[data-testid=hidden-char]").allTextContents()).toEqual(["\\u26A0"]);
    const warnings = argumentWarnings(readableArguments(raw));
    expect(warnings).toHaveLength(3);
    expect(await approval.locator("[data-testid=arguments-warning]").allTextContents()).toEqual(warnings.map((text) => `⚠ ${text}`));
    // The call's line in the list of tool calls reads so as well.
    expect(await page.textContent("[data-testid=tool-call]")).toContain(shown);
    await page.click("[data-testid=reject]");
    await page.waitForSelector("[data-testid=run][data-done=true]", { timeout: 20_000 });
    expect(errors).toEqual([]);
  });

  it("shows a held call's arguments in the order they are stored, right-to-left letters and all", async () => {
    const { page, errors } = await openApp();
    await ask(page, "Pay it [rtl]");
    await page.locator("[data-testid=approval]").waitFor({ timeout: 20_000 });
    const groups = ["\u05D7", "4417", "1234", "5678", "9113", "amount"];
    const increasing = (edges: number[]) => edges.every((left, i) => i === 0 || left > edges[i - 1]!);
    for (const shown of ["[data-testid=approval] [data-testid=arguments]", "[data-testid=tool-call]"]) {
      expect(await page.textContent(shown)).toContain('{"to":"\u05D7 4417 1234 5678 9113","amount":25}');
      const edges = await leftEdges(page, shown, groups);
      expect(increasing(edges), `${shown}: ${JSON.stringify(edges)}`).toBe(true);
    }
    await page.click("[data-testid=reject]");
    await page.waitForSelector("[data-testid=run][data-done=true]", { timeout: 20_000 });
    expect(errors).toEqual([]);
  });

  it("talks only to the server it was built for: a ?server= in the address gets no request", async () => {
    const asked: { method: string; url: string; authorization?: string }[] = [];
    const decoy = createServer((req, res) => {
      asked.push({ method: req.method ?? "", url: req.url ?? "", authorization: req.headers.authorization });
      res.writeHead(204, { "access-control-allow-origin": "*", "access-control-allow-headers": "*" }).end();
    });
    decoy.listen(0, "127.0.0.1");
    await once(decoy, "listening");
    try {
      const { port } = decoy.address() as AddressInfo;
      // A link naming another server: were it followed, the page's `#token=` would go there with every request.
      const { page, errors } = await openApp(`/?server=${encodeURIComponent(`http://127.0.0.1:${port}/graphql`)}`);
      await ask(page, "Where does this go?");
      await page.waitForSelector("[data-testid=run][data-status=SUCCEEDED][data-done=true]", { timeout: 20_000 });
      expect(await answer(page)).toBe(ANSWER);
      expect(asked).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await new Promise((resolve) => decoy.close(resolve));
    }
  });
});
