// R7: dangling tool calls are repaired in the model's view so that the request is protocol-valid.
import { describe, expect, it } from "vitest";
import type { ChatMessage, ToolCall } from "../../src/runtime/ports/model.js";
import { findDanglingToolCalls, repairNote, validateProtocol, withRepairs } from "../../src/runtime/memory/repair.js";

const call = (id: string, name = "search"): ToolCall => ({ id, name, arguments: `{"q":"${id}"}` });
const result = (id: string): ChatMessage => ({ role: "tool", toolCallId: id, content: `result of ${id}` });
const note = (c: ToolCall): ChatMessage => ({ role: "tool", toolCallId: c.id, content: repairNote(c) });

const system: ChatMessage = { role: "system", content: "You are a researcher." };
const question: ChatMessage = { role: "user", content: "Map EU battery cell capacity for 2027" };
const [a, b, c] = [call("call_a"), call("call_b", "read_material"), call("call_c")];
const parallel: ChatMessage = { role: "assistant", content: null, toolCalls: [a, b, c] };

describe("repairNote", () => {
  it("names the tool and call, and claims neither outcome", () => {
    const text = repairNote(b);
    expect(text).toContain("read_material");
    expect(text).toContain("call_b");
    expect(text).toMatch(/interrupted/);
    expect(text).toMatch(/may or may not have executed/);
    expect(text).toMatch(/do not assume either/);
  });
});

describe("withRepairs", () => {
  it("leaves a log without dangling calls unchanged", () => {
    const log: ChatMessage[] = [system, question, parallel, result("call_a"), result("call_b"), result("call_c"), { role: "assistant", content: "Done." }];
    expect(findDanglingToolCalls(log)).toEqual([]);
    const repaired = withRepairs(log);
    expect(repaired).toEqual({ messages: log, repaired: [] });
    expect(repaired.messages).not.toBe(log);
    expect(validateProtocol(log)).toEqual([]);
  });

  it("inserts a note for the one of three parallel calls that has no result, after the results it has", () => {
    const log: ChatMessage[] = [system, question, parallel, result("call_a"), result("call_c")];
    const before = structuredClone(log);
    expect(findDanglingToolCalls(log)).toEqual([b]);
    expect(validateProtocol(log)).toEqual(["message 2: tool call call_b has no result before the next non-tool message"]);

    const repaired = withRepairs(log);
    expect(repaired.repaired).toEqual([b]);
    expect(repaired.messages).toEqual([system, question, parallel, result("call_a"), result("call_c"), note(b)]);
    expect(validateProtocol(repaired.messages)).toEqual([]);
    expect(log).toEqual(before); // the input is not modified
  });

  it("inserts notes before a later user message, in call order", () => {
    const followUp: ChatMessage = { role: "user", content: "Also include the UK." };
    const log: ChatMessage[] = [system, question, parallel, result("call_b"), followUp];
    expect(findDanglingToolCalls(log)).toEqual([a, c]);

    const repaired = withRepairs(log);
    expect(repaired.repaired).toEqual([a, c]);
    expect(repaired.messages).toEqual([system, question, parallel, result("call_b"), note(a), note(c), followUp]);
    expect(validateProtocol(repaired.messages)).toEqual([]);
  });

  it("repairs dangling calls at any position, each right after its own turn", () => {
    const early = call("call_early");
    const late = call("call_late");
    const log: ChatMessage[] = [
      question,
      { role: "assistant", content: null, toolCalls: [early] },
      { role: "user", content: "continue" },
      { role: "assistant", content: "Checking.", toolCalls: [late] },
    ];
    const repaired = withRepairs(log);
    expect(repaired.repaired).toEqual([early, late]);
    expect(repaired.messages).toEqual([log[0], log[1], note(early), log[2], log[3], note(late)]);
    expect(validateProtocol(repaired.messages)).toEqual([]);
  });

  it("does not repair an already repaired log twice", () => {
    const once = withRepairs([system, question, parallel, result("call_a")]);
    expect(once.repaired).toEqual([b, c]);

    const twice = withRepairs(once.messages);
    expect(twice.repaired).toEqual([]);
    expect(twice.messages).toEqual(once.messages);

    // The repair recorded in the log (R7) answers the call, so a later load finds nothing dangling.
    const persisted = [...once.messages, { role: "user", content: "And now?" } satisfies ChatMessage];
    expect(findDanglingToolCalls(persisted)).toEqual([]);
    expect(withRepairs(persisted).messages).toEqual(persisted);
  });

  it("pairs results one to one, so a reused call id does not hide a dangling call", () => {
    const first = call("call_1");
    const log: ChatMessage[] = [
      { role: "assistant", content: null, toolCalls: [first] },
      { role: "user", content: "retry" },
      { role: "assistant", content: null, toolCalls: [first] },
      result("call_1"),
    ];
    expect(findDanglingToolCalls(log)).toEqual([first]);
    expect(withRepairs(log).messages).toEqual([log[0], note(first), log[1], log[2], log[3]]);
  });
});

describe("validateProtocol", () => {
  it("reports a tool message without a preceding call, duplicates and missing results", () => {
    const log: ChatMessage[] = [
      question,
      result("call_x"),
      { role: "assistant", content: null, toolCalls: [a, a, b] },
      result("call_a"),
      result("call_a"),
      { role: "assistant", content: "Done." },
      result("call_b"),
      { role: "assistant", content: null, toolCalls: [c] },
    ];
    expect(validateProtocol(log)).toEqual([
      "message 1: tool result for call_x without a preceding call",
      "message 2: duplicate tool call id call_a",
      "message 4: duplicate tool result for call_a",
      "message 2: tool call call_b has no result before the next non-tool message",
      "message 6: tool result for call_b without a preceding call",
      "message 7: tool call call_c has no result before the next non-tool message",
    ]);
  });

  it("accepts an empty list and plain conversation", () => {
    expect(validateProtocol([])).toEqual([]);
    expect(validateProtocol([system, question, { role: "assistant", content: "Hello." }])).toEqual([]);
  });
});
