// The trace viewer on a big running trace (eight replies of sixty tool calls: some 500 spans and a
// thousand events), in headless Chromium: the page stays responsive because it redraws only what
// changed. A tick of the clock updates the running spans' rows and no other; a click changes the
// clicked row; new records add or change only the rows of the spans they touch, leaving the rest of
// the tree (its elements, hence a reader's focus and place) as it was. Expand, collapse and the end
// of the run keep working. Each check counts the rows a MutationObserver saw change.
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ScriptStep } from "../../src/runtime/adapters/scripted-model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { admit } from "../support/fixtures.js";
import { haveChromium, launchChromium, openViewer, startViewerServer, type ViewerServer } from "../support/viewer-browser.js";

const REPLIES = 8;
const traceIdOf = (runId: string) => Buffer.from(runId, "base64").toString("utf8").split(":")[1]!;
const CALLS = 60;

/** A tool that answers once `opened` resolves, and says when it has started. */
function heldTool(name: string, opened: Promise<unknown>, started: () => void): Tool {
  return {
    schema: { name, description: "waits for the test", parameters: { type: "object" } },
    execute: async () => {
      started();
      await opened;
      return `${name} opened`;
    },
  };
}

const quickTool: Tool = { schema: { name: "quick", description: "answers at once", parameters: { type: "object" } }, execute: async () => "done" };

function deferred() {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * Starts counting the rows of the tree that change: the span rows (by span id) and event rows a
 * mutation adds, removes or changes. touchedRows() says which since the last call.
 */
const watchRows = (page: Page) =>
  page.evaluate(() => {
    const spans = new Set<string>();
    const events = new Set<Element>();
    const spanOf = (node: Element) => (node.closest("[data-testid=span]") as HTMLElement | null)?.dataset.spanId;
    const count = (row: Element, parent: Element) => {
      if (row.matches(".event-row")) events.add(row);
      const id = row.matches(".span-row") ? (spanOf(row) ?? spanOf(parent)) : undefined;
      if (id) spans.add(id);
    };
    const rowsIn = (node: Node, parent: Element) => {
      if (!(node instanceof Element)) return;
      if (node.matches(".row")) count(node, parent);
      for (const row of node.querySelectorAll(".row")) count(row, row.parentElement!);
    };
    const take = (records: MutationRecord[]) => {
      for (const record of records) {
        const target = record.target instanceof Element ? record.target : record.target.parentElement!;
        const row = target.closest(".row");
        if (row) count(row, row.parentElement ?? target);
        for (const node of [...record.addedNodes, ...record.removedNodes]) rowsIn(node, target);
      }
    };
    const observer = new MutationObserver(take);
    observer.observe(document.getElementById("tree")!, { subtree: true, childList: true, attributes: true, characterData: true });
    (window as unknown as { touchedRows: () => unknown }).touchedRows = () => {
      take(observer.takeRecords());
      const touched = { spans: [...spans].sort(), events: events.size };
      spans.clear();
      events.clear();
      return touched;
    };
  });

type Touched = { spans: string[]; events: number };
const touchedRows = (page: Page) => page.evaluate(() => (window as unknown as { touchedRows: () => Touched }).touchedRows());
const runningSpans = (page: Page) =>
  page.$$eval("[data-testid=span][data-status=RUNNING]", (spans) => spans.map((s) => (s as HTMLElement).dataset.spanId!).sort());
/** The span ids inside each TURN, in order (the turn's own first). */
const turnSpans = (page: Page) =>
  page.$$eval("[data-testid=span][data-kind=TURN]", (turns) =>
    turns.map((turn) => [turn, ...turn.querySelectorAll("[data-testid=span]")].map((s) => (s as HTMLElement).dataset.spanId!)),
  );

/** Waits until the page shows every record of the run's trace (its last seq, as the database has it), and as many spans. */
async function shownAll(page: Page, app: ViewerServer, runId: string) {
  const traceId = traceIdOf(runId);
  await expect
    .poll(
      async () => {
        const { lastSeq } = await app.t.app.db.prisma.trace.findUniqueOrThrow({ where: { id: traceId } });
        const spans = await app.t.app.db.prisma.span.count({ where: { traceId } });
        return [await page.textContent("[data-testid=last-seq]"), await page.locator("[data-testid=span]").count()].join(" ") === `${lastSeq} ${spans}`;
      },
      { timeout: 30_000 },
    )
    .toBe(true);
}

describe.runIf(haveChromium)("the trace viewer on a big running trace", () => {
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

  it("redraws only the running rows on a tick, the clicked row on a click and the changed rows on a record", async () => {
    const first = deferred();
    const second = deferred();
    const atFirst = deferred();
    const atSecond = deferred();
    const plan: ScriptStep[] = [
      ...Array.from({ length: REPLIES }, () => ({ toolCalls: Array.from({ length: CALLS }, () => ({ name: "quick", arguments: {} })) })),
      { toolCalls: [{ name: "first_gate", arguments: {} }] },
      { toolCalls: [{ name: "second_gate", arguments: {} }] },
      { content: "All calls answered." },
    ];
    const tools = [quickTool, heldTool("first_gate", first.promise, atFirst.resolve), heldTool("second_gate", second.promise, atSecond.resolve)];
    // The gates hold until the test opens them, however long a busy machine takes to load the page.
    app = await startViewerServer(plan, tools, { toolTimeoutMs: 170_000 });
    const { run } = await admit(app.t.as(app.key), { question: "Call the quick tool many times." });
    await atFirst.promise;
    const { page, errors } = await openViewer(browser, app.url(run.id));
    await page.waitForSelector("body[data-connection=live]", { timeout: 30_000 });
    await page.waitForSelector("[data-testid=span][data-kind=TOOL_CALL][data-status=RUNNING]", { timeout: 30_000 });
    // Every span and record the trace has while the run waits at the gate (eight replies of sixty calls, and the gate's turn), shown.
    await shownAll(page, app, run.id);
    expect(await page.locator("[data-testid=span]").count()).toBeGreaterThan(REPLIES * CALLS);
    const running = await runningSpans(page);
    const gateCall = await page.$eval("[data-testid=span][data-kind=TOOL_CALL][data-status=RUNNING]", (s) => (s as HTMLElement).dataset.spanId!);
    expect(running).toContain(gateCall);

    // A second and a half of ticks while nothing is recorded: only the running rows change.
    await watchRows(page);
    await page.waitForTimeout(1500);
    const ticks = await touchedRows(page);
    expect(ticks.spans).toEqual(running);
    expect(ticks.events).toBe(0);

    // A click selects one row: that row changes, and only the running rows besides.
    const turns = await turnSpans(page);
    const earlyCall = turns[2]![5]!;
    const earlyRow = page.locator(`[data-span-id="${earlyCall}"] > [data-testid=span-row]`);
    await earlyRow.evaluate((row) => ((row as HTMLElement & { kept?: boolean }).kept = true));
    await touchedRows(page);
    await earlyRow.click();
    await expect.poll(() => page.locator("[data-testid=panel]").getAttribute("data-span-id")).toBe(earlyCall);
    await expect.poll(() => earlyRow.getAttribute("class")).toContain("selected");
    const click = await touchedRows(page);
    expect(click.spans.filter((id) => !running.includes(id))).toEqual([earlyCall]);
    expect(click.events).toBe(0);

    // The first gate opens: its call ends, its turn ends, a reply calls the second gate. Only the rows of
    // those spans (and of the run and attempt above them) change; the earlier turns' rows stay as they were.
    first.resolve();
    await atSecond.promise;
    await expect
      .poll(() => page.locator("[data-testid=span][data-kind=TOOL_CALL][data-status=RUNNING] .name").allTextContents(), { timeout: 30_000 })
      .toEqual(["execute_tool second_gate"]);
    await shownAll(page, app, run.id);
    await page.waitForTimeout(500);
    const records = await touchedRows(page);
    const earlier = new Set(turns.slice(0, -1).flat());
    expect(records.spans.filter((id) => earlier.has(id))).toEqual([]);
    expect(records.spans.length).toBeLessThanOrEqual(12);
    expect(records.events).toBeLessThanOrEqual(12);
    // The selected row is the same element, still selected.
    expect(await earlyRow.evaluate((row) => Boolean((row as HTMLElement & { kept?: boolean }).kept) && row.classList.contains("selected"))).toBe(true);

    // Collapse and expand still work on the big tree.
    const firstTurn = page.locator("[data-testid=span][data-kind=TURN]").first();
    await firstTurn.locator("> [data-testid=span-row] [data-testid=toggle]").click();
    await expect.poll(() => firstTurn.getAttribute("data-collapsed")).toBe("true");
    expect(await firstTurn.locator("[data-kind=TOOL_CALL]").count()).toBe(0);
    await firstTurn.locator("> [data-testid=span-row] [data-testid=toggle]").click();
    await expect.poll(() => firstTurn.locator("[data-kind=TOOL_CALL]").count()).toBe(CALLS);
    expect(await firstTurn.getAttribute("data-collapsed")).toBeNull();

    second.resolve();
    await page.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 30_000 });
    expect(await page.locator("[data-testid=bar].RUNNING").count()).toBe(0);
    expect(await page.locator("[data-testid=span-row] .dur").evaluateAll((cells) => cells.filter((c) => c.textContent!.endsWith("…")).length)).toBe(0);
    expect(await page.textContent("[data-testid=answer]")).toBe("All calls answered.");
    const finalCount = await app.t.app.db.prisma.span.count({ where: { traceId: traceIdOf(run.id) } });
    expect(await page.locator("[data-testid=span]").count()).toBe(finalCount);
    expect(errors).toEqual([]);
    await page.close();
  }, 180_000);
});
