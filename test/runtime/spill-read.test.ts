// R10, R11: the pure parts of spilling — the JSON list index, the JSON-path subset, byte ranges
// widened to character boundaries, pages, per-call maximums and previews — over a store that
// keeps results in memory.
import { describe, expect, it } from "vitest";
import { DEFAULT_SPILL_POLICY } from "../../src/runtime/spill/spill-policy.js";
import { ToolError } from "../../src/runtime/ports/tool.js";
import { indexJsonList, itemText } from "../../src/runtime/spill/json-list-index.js";
import { evaluate, parseJsonPath } from "../../src/runtime/spill/json-path.js";
import { readBack, widenToCharacters } from "../../src/runtime/spill/read-back.js";
import { planSpill } from "../../src/runtime/spill/spill-plan.js";
import { Spiller } from "../../src/runtime/spill/spiller.js";
import { InMemorySpillStore } from "../support/in-memory-spill-store.js";
import { InMemoryTraceSink } from "../support/in-memory-trace-sink.js";
import { testRun } from "../support/tool-context.js";

const policy = { ...DEFAULT_SPILL_POLICY, thresholdChars: 1_000, previewChars: 300 };

function spilled(content: string, overrides: Partial<typeof policy> = {}) {
  const store = new InMemorySpillStore();
  const plan = planSpill({ output: content, toolName: "search", handle: "spill://researcher/c1/call_1", policy: { ...policy, ...overrides } });
  if (!plan) throw new Error("expected a spill");
  return { store, plan, spill: store.add(plan, content) };
}

const body = (reply: string) => reply.slice(reply.indexOf("\n") + 1);

describe("the JSON list index", () => {
  it("finds each item of a top-level list exactly, through strings with brackets, escapes and emoji", () => {
    const items = [{ a: '["]}' }, 'x\\"y', [1, [2, { b: "😀" }]], null, 3.5e2, { "😀": "é" }];
    const text = ` [ ${items.map((i) => JSON.stringify(i)).join(" ,\n ")} ]\n`;
    const index = indexJsonList(text)!;
    expect(index.path).toBe("$");
    expect(index.starts16.map((_, k) => JSON.parse(itemText(text, index.starts16, index.end16, k)))).toEqual(items);
    // Character offsets trail UTF-16 indexes by one for each emoji before them.
    expect(index.startsCp.at(-1)).toBe(index.starts16.at(-1)! - 1);
    expect(index.endCp).toBe(index.end16 - 2);
  });

  it("indexes the largest list under a top-level object, names its path, and refuses non-lists", () => {
    const text = JSON.stringify({ total: 3, "odd key": [1], items: [{ id: 1 }, { id: 2 }, { id: 3 }], tail: "]" });
    expect(indexJsonList(text)).toMatchObject({ path: "$.items", starts16: [expect.any(Number), expect.any(Number), expect.any(Number)] });
    expect(indexJsonList(JSON.stringify({ "odd key": [1, 2] }))?.path).toBe('$["odd key"]');
    expect(indexJsonList("plain text [1, 2]")).toBeNull();
    expect(indexJsonList("[1, 2] trailing")).toBeNull();
    expect(indexJsonList('[1, "unterminated]')).toBeNull();
    expect(indexJsonList(JSON.stringify({ a: 1 }))).toBeNull();
  });
});

describe("the JSON-path subset", () => {
  const doc = { a: { b: [0, 1, 2, 3, 4, 5, 6] }, items: [{ id: "x" }, { id: "y" }, { name: "z" }], "odd key": true };

  it("selects keys, indexes, slices and wildcards", () => {
    expect(evaluate(doc, parseJsonPath("$.a.b[3:6]"))).toEqual([3, 4, 5]);
    expect(evaluate(doc, parseJsonPath("$.a.b[3]"))).toBe(3);
    expect(evaluate(doc, parseJsonPath("$.a.b[-1]"))).toBe(6);
    expect(evaluate(doc, parseJsonPath("$.a.b[:2]"))).toEqual([0, 1]);
    expect(evaluate(doc, parseJsonPath("$.a.b[-2:]"))).toEqual([5, 6]);
    expect(evaluate(doc, parseJsonPath("$.items[*].id"))).toEqual(["x", "y"]);
    expect(evaluate(doc, parseJsonPath("$['odd key']"))).toBe(true);
    expect(evaluate(doc, parseJsonPath('$["items"][1].id'))).toBe("y");
    expect(evaluate(doc, parseJsonPath("$"))).toEqual(doc);
  });

  it("names what is wrong with a path", () => {
    expect(() => parseJsonPath("items[0]")).toThrow(/starts with "\$"/);
    expect(() => parseJsonPath("$.items[")).toThrow(/cannot read the path at "\["/);
    expect(() => evaluate(doc, parseJsonPath("$.a.c"))).toThrow(/\$\.a has no key "c" \(its keys: b\)/);
    expect(() => evaluate(doc, parseJsonPath("$.a.b[7]"))).toThrow(/has 7 items; index 7 is out of range/);
  });
});

describe("byte ranges", () => {
  // a (1 byte) é (2) € (3) 😀 (4) b (1): offsets 0, 1, 3, 6, 10.
  const bytes = new Uint8Array(Buffer.from("aé€😀b", "utf8"));

  it("widens a range that cuts characters outward to their boundaries, and cuts at the maximum on a boundary", () => {
    expect(widenToCharacters(bytes, 0, 4, 8, 100)).toEqual({ start: 3, end: 10 });
    expect(widenToCharacters(bytes, 0, 2, 3, 100)).toEqual({ start: 1, end: 3 });
    expect(widenToCharacters(bytes, 0, 0, 11, 100)).toEqual({ start: 0, end: 11 });
    expect(widenToCharacters(bytes, 0, 1, 9, 5)).toEqual({ start: 1, end: 6 });
  });

  it("reads byte-exact ranges and states the actual range", async () => {
    const text = `${"é€😀x".repeat(500)}`;
    const { store, spill } = spilled(text);
    const reply = await readBack(store, spill, { range: { start: 5, end: 23 } }, 1_000);
    // Each repeat is 10 bytes: é at 0, € at 2, 😀 at 5, x at 9; byte 23 falls inside the second €.
    expect(reply.split("\n")[0]).toBe("bytes 5–25 of 5000 (end exclusive; requested 5–23: widened to character boundaries):");
    expect(Buffer.from(body(reply), "utf8")).toEqual(Buffer.from(text, "utf8").subarray(5, 25));
    const before = await readBack(store, spill, { range: { start: 11, end: 19 } }, 1_000);
    expect(before.split("\n")[0]).toBe("bytes 10–19 of 5000 (end exclusive; requested 11–19: widened to character boundaries):");
    const exact = await readBack(store, spill, { range: { start: 12, end: 19 } }, 1_000);
    expect(exact.split("\n")[0]).toBe("bytes 12–19 of 5000 (end exclusive):");
    expect(body(exact)).toBe("€😀");
  });

  it("never returns more than the maximum per read, and refuses ranges outside the result", async () => {
    const { store, spill } = spilled("é".repeat(2_000));
    const reply = await readBack(store, spill, { range: { start: 0, end: 4_000 } }, 1_001);
    expect(Buffer.byteLength(body(reply))).toBe(1_000);
    expect(reply).toContain("continue from 1000");
    await expect(readBack(store, spill, { range: { start: 4_000, end: 4_100 } }, 1_000)).rejects.toThrow(
      new ToolError("range.start 4000 is past the end: the result has 4000 bytes (offsets 0–3999)."),
    );
    await expect(readBack(store, spill, { range: { start: 10, end: 10 } }, 1_000)).rejects.toBeInstanceOf(ToolError);
    const tail = await readBack(store, spill, { range: { start: 3_990, end: 9_000 } }, 1_000);
    expect(tail.split("\n")[0]).toContain("the result ends at byte 4000");
  });

  it("pages tile the whole result exactly, even where pages cut characters", async () => {
    const text = Array.from({ length: 3_000 }, (_, i) => ["a", "é", "€", "😀"][i % 4]).join("");
    const { store, spill } = spilled(text);
    const pages: string[] = [];
    for (let page = 1; ; page += 1) {
      const reply = await readBack(store, spill, { page }, 1_000);
      pages.push(body(reply));
      expect(Buffer.byteLength(body(reply))).toBeLessThanOrEqual(1_000);
      if (reply.includes("last page")) break;
    }
    expect(pages.join("")).toBe(text);
    await expect(readBack(store, spill, { page: pages.length + 1 }, 1_000)).rejects.toThrow(/page is a number from 1 to/);
  });
});

describe("JSON-path reads", () => {
  const items = Array.from({ length: 500 }, (_, i) => ({ id: i, title: `item ${i} — ✓`, tags: ["a", "b"] }));
  const text = JSON.stringify({ total: 500, items }, null, 2);

  it("reads list items through the index, exactly as stored", async () => {
    const { store, spill } = spilled(text);
    expect(spill.list).toEqual({ path: "$.items", itemCount: 500 });
    const reply = await readBack(store, spill, { jsonPath: "$.items[3:6]" }, 16_384);
    expect(reply.split("\n")[0]).toBe("$.items[3:6]: items 3–5 of 500 in $.items:");
    expect(JSON.parse(body(reply))).toEqual(items.slice(3, 6));
    expect(body(reply)).toContain(JSON.stringify(items[3], null, 2).replace(/\n/g, "\n    "));
    expect(JSON.parse(body(await readBack(store, spill, { jsonPath: "$.items[-1].title" }, 16_384)))).toBe("item 499 — ✓");
    expect(JSON.parse(body(await readBack(store, spill, { jsonPath: "$.items[0:4].id" }, 16_384)))).toEqual([0, 1, 2, 3]);
  });

  it("reads other paths by parsing the whole result", async () => {
    const { store, spill } = spilled(text);
    expect(JSON.parse(body(await readBack(store, spill, { jsonPath: "$.total" }, 16_384)))).toBe(500);
  });

  it("stays under the maximum per read and says how to continue", async () => {
    const { store, spill } = spilled(text);
    const reply = await readBack(store, spill, { jsonPath: "$.items[*]" }, 2_000);
    expect(Buffer.byteLength(body(reply))).toBeLessThanOrEqual(2_000);
    const [, last] = /items 0–(\d+) of 500/.exec(reply)!;
    expect(reply).toContain(`continue with $.items[${Number(last) + 1}:500]`);
    expect(JSON.parse(body(reply))).toEqual(items.slice(0, Number(last) + 1));
  });

  it("answers bad paths and non-JSON results with errors the model can act on", async () => {
    const { store, spill } = spilled(text);
    await expect(readBack(store, spill, { jsonPath: "$.items[900]" }, 16_384)).rejects.toThrow(/has 500 items \(0–499\); index 900 is out of range/);
    await expect(readBack(store, spill, { jsonPath: "$.nope" }, 16_384)).rejects.toThrow(/has no key "nope"/);
    await expect(readBack(store, spill, { jsonPath: "items" }, 16_384)).rejects.toBeInstanceOf(ToolError);
    await expect(readBack(store, spill, { jsonPath: "$" }, 16_384)).rejects.toThrow(/over the 16384-byte maximum per read/);
    const prose = spilled("word ".repeat(400));
    await expect(readBack(prose.store, prose.spill, { jsonPath: "$[0]" }, 16_384)).rejects.toThrow(/not JSON; read it by byte range or page/);
  });
});

describe("previews", () => {
  it("keeps small results inline and previews a JSON list with whole leading items", () => {
    expect(planSpill({ output: "short", toolName: "t", handle: "h", policy })).toBeNull();
    const list = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ id: i, text: "lorem ipsum dolor" })));
    const plan = planSpill({ output: list, toolName: "t", handle: "h", policy })!;
    expect(plan.strategy).toBe("json-items");
    expect(plan.preview.length).toBeLessThanOrEqual(300);
    expect(JSON.parse(plan.preview)).toEqual(JSON.parse(list).slice(0, plan.previewItems!));
    expect(plan).toMatchObject({ sizeBytes: list.length, list: { path: "$" } });
  });

  it("previews text by its first characters, and JSON too when the tool's strategy is head", () => {
    const text = "😀".repeat(2_000);
    const plan = planSpill({ output: text, toolName: "t", handle: "h", policy })!;
    expect(plan).toMatchObject({ strategy: "head", sizeBytes: 8_000, sizeChars: 2_000, list: null });
    expect(plan.preview).toBe("😀".repeat(150));
    const json = JSON.stringify(Array.from({ length: 300 }, (_, i) => i * 1_000));
    expect(planSpill({ output: json, toolName: "t", handle: "h", policy: { ...policy, strategy: "head" } })).toMatchObject({
      strategy: "head",
      preview: json.slice(0, 300),
    });
    expect(planSpill({ output: json, toolName: "t", handle: "h", policy: { ...policy, enabled: false } })).toBeNull();
  });
});

describe("the spiller", () => {
  it('takes each tool\'s policy over the "*" entry over the defaults, and never spills read_spill', () => {
    const spiller = new Spiller({
      store: new InMemorySpillStore(),
      policies: { "*": { thresholdChars: 64_000 }, http_fetch: { strategy: "head", previewChars: 4_096 }, read_spill: { enabled: true } },
    });
    expect(spiller.policyFor("http_fetch")).toEqual({ enabled: true, thresholdChars: 64_000, previewChars: 4_096, strategy: "head" });
    expect(spiller.policyFor("other")).toEqual({ ...DEFAULT_SPILL_POLICY, thresholdChars: 64_000 });
    expect(spiller.policyFor("read_spill").enabled).toBe(false);
  });

  it("gives repeated tool call ids distinct handles and records the spill on the call's own span", async () => {
    const store = new InMemorySpillStore();
    const sink = new InMemoryTraceSink();
    const run = testRun({ conversationId: "c1" });
    const big = "q".repeat(40_000);
    store.add(planSpill({ output: big, toolName: "t", handle: "spill://researcher/c1/call_0_0", policy })!, big);
    const step = new Spiller({ store }).forTurn(run, sink);
    const spans = await Promise.all([1, 2].map((n) => sink.startSpan({ traceId: "t", kind: "TOOL_CALL", name: `call ${n}` })));
    const results = await Promise.all(spans.map((span) => step({ id: "call_0_0", name: "t", arguments: "{}" }, big, span)));
    expect(results.map((r) => r!.spill.handle).sort()).toEqual(["spill://researcher/c1/call_0_0~2", "spill://researcher/c1/call_0_0~3"]);
    expect(sink.spans.map((s) => JSON.parse(s.events[0]!.payload).handle)).toEqual(results.map((r) => r!.spill.handle));
    expect(results[0]!.shown).toContain(`Read more with read_spill {"handle":"${results[0]!.spill.handle}"`);
    expect(await step({ id: "call_9", name: "t", arguments: "{}" }, "small", spans[0]!)).toBeNull();
  });
});
