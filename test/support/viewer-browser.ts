// The trace viewer in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core):
// a server with a scripted model and tools of known durations, the page opened with a key, and
// what a user would notice — errors in the console, a page wider than the screen — collected.
import { existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import type { EventBus } from "../../src/events/topics.js";
import { type ScriptStep, ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import type { ModelPort } from "../../src/runtime/ports/model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { type RunningServer, startHttpServer } from "../../src/server/http-server.js";
import { projectRoot } from "./processes.js";
import { startTestApp, type TestApp } from "./test-app.js";

export const CHROMIUM = "/usr/bin/chromium";
export const haveChromium = existsSync(CHROMIUM);

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
}

/** A tool that waits `ms` (or its `ms` argument) and says so; a stop of the run aborts it. */
export const waitTool = (name: string, ms: number): Tool => ({
  schema: { name, description: `waits ${ms} ms`, parameters: { type: "object", properties: { ms: { type: "number" } } } },
  execute: (args, { signal }) =>
    new Promise((resolve, reject) => {
      const wait = Number((args as { ms?: number }).ms ?? ms);
      const timer = setTimeout(() => resolve(`${name} waited ${wait} ms`), wait);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(new Error("aborted"));
      });
    }),
});

/** A tool that answers once `opened` resolves: the run waits there until the test lets it go on. */
export const gateTool = (name: string, opened: Promise<unknown>): Tool => ({
  schema: { name, description: "waits for the test", parameters: { type: "object" } },
  execute: async () => {
    await opened;
    return `${name} opened`;
  },
});

/** A tool whose result is `chars` characters long: more than an event's preview shows. */
export const reportTool = (chars: number): Tool => ({
  schema: { name: "long_report", description: "returns a long report", parameters: { type: "object" } },
  execute: async () => Array.from({ length: chars }, (_, i) => String.fromCharCode(97 + (i % 26))).join(""),
});

export type ViewerServer = { t: TestApp; server: RunningServer; key: string; url(runId: string): string; close(): Promise<void> };

/** A listening app whose worker runs `model` (or a scripted model of `steps`) with `tools`, and one principal's key. */
export async function startViewerServer(
  model: ModelPort | ScriptStep[],
  tools: Tool[] = [],
  limits: {
    leaseMs?: number;
    toolTimeoutMs?: number;
    approvals?: { rules: Record<string, "always" | "never"> };
    frameAncestors?: string[];
    events?: EventBus;
  } = {},
): Promise<ViewerServer> {
  const t = await startTestApp("pglite", {
    authRequired: true,
    events: limits.events,
    viewerFrameAncestors: limits.frameAncestors,
    runtime: {
      model: Array.isArray(model) ? new ScriptedModel({ name: "viewer", steps: model }) : model,
      sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-viewer-")),
      extraTools: tools,
      // Long enough that a busy machine never loses a lease by accident.
      leaseMs: limits.leaseMs ?? 30_000,
      toolTimeoutMs: limits.toolTimeoutMs ?? 20_000,
      approvals: limits.approvals,
    },
  });
  const server = await startHttpServer({ app: t.app, port: 0, host: "127.0.0.1" });
  const key = await t.createPrincipal("viewer");
  return {
    t,
    server,
    key,
    url: (runId) => `http://127.0.0.1:${server.port}/traces/${encodeURIComponent(runId)}#key=${encodeURIComponent(key)}`,
    async close() {
      await server.close();
      await t.close();
    },
  };
}

export type ViewerPage = { page: Page; errors: string[]; requests: string[] };

/** Opens the page at this size, collecting uncaught errors, console errors and failed requests. */
export async function openViewer(browser: Browser, url: string, viewport = DESKTOP): Promise<ViewerPage> {
  const page = await browser.newPage({ viewport });
  const errors: string[] = [];
  const requests: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("pageerror", (error) => errors.push(`page error: ${String(error)}`));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  page.on("requestfailed", (request) => errors.push(`request failed: ${request.url()}`));
  page.on("response", (response) => {
    if (response.status() >= 400) errors.push(`${response.status()}: ${response.url()}`);
  });
  await page.goto(url);
  return { page, errors, requests };
}

/** How many pixels the page is wider than its window (0: nothing to scroll sideways). */
export function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - document.documentElement.clientWidth);
}

/** Saves a screenshot as test-results/<name>.png and returns its path. */
export async function screenshot(page: Page, name: string, fullPage = false): Promise<string> {
  const file = path.join(projectRoot, "test-results", `${name}.png`);
  mkdirSync(path.dirname(file), { recursive: true });
  await page.screenshot({ path: file, fullPage });
  return file;
}

/** Each span row's waterfall bar width in pixels, by span id. */
export function barWidths(page: Page): Promise<Record<string, number>> {
  return page.$$eval("[data-testid=span]", (spans) =>
    Object.fromEntries(
      spans.map((span) => {
        const bar = span.querySelector(":scope > [data-testid=span-row] [data-testid=bar]")!;
        return [(span as HTMLElement).dataset.spanId!, bar.getBoundingClientRect().width];
      }),
    ),
  );
}

/** The row of the span of this kind whose name contains `name`. */
export const spanRow = (page: Page, kind: string, name: string) =>
  page
    .locator(`[data-testid=span][data-kind="${kind}"]`)
    .filter({ has: page.locator(".name", { hasText: name }) })
    .first()
    .locator("> [data-testid=span-row]");

/**
 * Where on screen each of `pieces` starts (its left edge in pixels), found in that order in the
 * text of the first element `selector` matches: text shown in the order it is stored has them
 * increasing.
 */
export async function leftEdges(page: Page, selector: string, pieces: string[]): Promise<number[]> {
  // A tree the viewer has just replaced (a live update renders it anew) can be measured before
  // it is laid out, when every piece's box is empty: measure again until the text has a place.
  const deadline = Date.now() + 10_000;
  for (;;) {
    const edges = await measuredLeftEdges(page, selector, pieces);
    if (edges.some((left) => left !== 0) || Date.now() > deadline) return edges;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function measuredLeftEdges(page: Page, selector: string, pieces: string[]): Promise<number[]> {
  return page.$eval(
    selector,
    (element, wanted) => {
      const nodes: Text[] = [];
      const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) nodes.push(node as Text);
      const text = nodes.map((node) => node.data).join("");
      /** The text node and offset of a position in the element's whole text. */
      const at = (position: number): [Text, number] => {
        let start = 0;
        for (const node of nodes) {
          if (position <= start + node.data.length) return [node, position - start];
          start += node.data.length;
        }
        throw new Error(`position ${position} is past the text`);
      };
      let from = 0;
      return wanted.map((piece) => {
        const index = text.indexOf(piece, from);
        if (index < 0) throw new Error(`"${piece}" is not in "${text}" after ${from}`);
        from = index + piece.length;
        const range = document.createRange();
        range.setStart(...at(index));
        range.setEnd(...at(from));
        return range.getBoundingClientRect().left;
      });
    },
    pieces,
  );
}
