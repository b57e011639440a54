// Building a request counts the tool schemas offered with it. A run offers the same tools turn
// after turn: their JSON (kilobytes with the built-in tools) is counted once, not on every turn,
// and counted again as soon as the tools offered change.
import { describe, expect, it } from "vitest";
import { MemoCache } from "../../src/runtime/memory/memo-cache.js";
import { localEstimator, type TokenEstimator } from "../../src/runtime/memory/token-estimator.js";
import type { ToolSchema } from "../../src/runtime/ports/model.js";

const schema = (name: string): ToolSchema => ({ name, description: `the ${name} tool`, parameters: { type: "object", properties: { q: { type: "string" } } } });

describe("the memo cache's tool schema tokens", () => {
  it("counts the same schemas once across requests, and again when they change", () => {
    let counted = 0;
    const estimator: TokenEstimator = { ...localEstimator, tools: (tools) => ((counted += 1), localEstimator.tools(tools)) };
    const cache = new MemoCache(estimator);
    const [search, fetch, tasks] = [schema("search"), schema("fetch"), schema("task_list")];
    const tokens = localEstimator.tools([search, fetch]);
    // Every turn lists its tools anew: the same schema objects in a new array.
    for (let turn = 0; turn < 8; turn += 1) expect(cache.memoEstimator.tools([search, fetch])).toBe(tokens);
    expect(counted).toBe(1);
    expect(cache.memoEstimator.tools([search, fetch, tasks])).toBe(localEstimator.tools([search, fetch, tasks]));
    expect(cache.memoEstimator.tools([fetch, search])).toBe(localEstimator.tools([fetch, search]));
    // A schema with the same name but other content (an MCP server's changed tool) is counted anew.
    const changed = { ...search, description: "x".repeat(400) };
    expect(cache.memoEstimator.tools([changed, fetch])).toBe(localEstimator.tools([changed, fetch]));
    expect(counted).toBe(4);
    expect(cache.memoEstimator.tools([])).toBe(0);
  });

  it("counts each run's tools once while runs with different tools make requests in turn", () => {
    let counted = 0;
    const estimator: TokenEstimator = { ...localEstimator, tools: (tools) => ((counted += 1), localEstimator.tools(tools)) };
    const cache = new MemoCache(estimator);
    const [search, fetch, workspace] = [schema("search"), schema("fetch"), schema("propose_checkpoint")];
    // A run outside a workspace and one in a workspace, their requests interleaved.
    const plain = [search, fetch];
    const inWorkspace = [search, workspace, fetch];
    for (let turn = 0; turn < 5; turn += 1) {
      expect(cache.memoEstimator.tools([...plain])).toBe(localEstimator.tools(plain));
      expect(cache.memoEstimator.tools([...inWorkspace])).toBe(localEstimator.tools(inWorkspace));
      expect(cache.memoEstimator.tools([search])).toBe(localEstimator.tools([search]));
    }
    expect(counted).toBe(3);
  });
});
