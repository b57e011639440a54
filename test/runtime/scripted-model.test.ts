// The scripted model: deterministic replies, request recording, abort, and the offline demo script.
import { describe, expect, it } from "vitest";
import type { ChatMessage, ModelRequest, ModelStreamEvent, ToolSchema } from "../../src/runtime/ports/model.js";
import { createDemoModel } from "../../src/runtime/adapters/demo-model.js";
import { NO_MORE_STEPS_REPLY, ScriptedModel, type ScriptStep } from "../../src/runtime/adapters/scripted-model.js";

const taskListTool: ToolSchema = {
  name: "task_list",
  description: "Manages the run's task list",
  parameters: { type: "object", properties: { action: { type: "string" }, title: { type: "string" } } },
};
const searchTool: ToolSchema = { name: "search", description: "Searches", parameters: { type: "object" } };

const script: ScriptStep[] = [
  {
    toolCalls: [
      { name: "search", arguments: { query: "EU battery cells" } },
      { name: "search", arguments: "{not json" },
    ],
  },
  { content: "Europe will have about 1 TWh of cell capacity by 2027." },
];

async function runScript() {
  const model = new ScriptedModel({ name: "batteries", steps: script });
  const events: ModelStreamEvent[] = [];
  const messages: ChatMessage[] = [{ role: "user", content: "How much battery capacity?" }];
  const first = await model.complete({ messages, tools: [searchTool] }, (event) => events.push(event));
  const second = await model.complete({ messages, tools: [searchTool] }, (event) => events.push(event));
  const third = await model.complete({ messages, tools: [] });
  return { model, events, responses: [first, second, third] };
}

describe("ScriptedModel", () => {
  it("is labelled as scripted", () => {
    const model = new ScriptedModel({ name: "x", steps: [] });
    expect(model.label).toBe("scripted:x");
    expect(model.model).toBe("x");
    expect(model.scripted).toBe(true);
    expect(model.contextWindow).toBe(128_000);
    expect(new ScriptedModel({ name: "x", steps: [], contextWindow: 8_000 }).contextWindow).toBe(8_000);
  });

  it("answers the same script identically every time, with deterministic tool call ids", async () => {
    const a = await runScript();
    const b = await runScript();
    expect(b.responses).toEqual(a.responses);
    expect(b.events).toEqual(a.events);

    const [first, second, third] = a.responses;
    expect(first).toMatchObject({ content: null, finishReason: "tool_calls", model: "scripted:batteries" });
    expect(first!.toolCalls).toEqual([
      { id: "call_0_0", name: "search", arguments: '{"query":"EU battery cells"}' },
      { id: "call_0_1", name: "search", arguments: "{not json" },
    ]);
    expect(second).toMatchObject({ content: script[1]!.content, toolCalls: [], finishReason: "stop" });
    expect(third).toMatchObject({ content: NO_MORE_STEPS_REPLY, toolCalls: [], finishReason: "stop" });
  });

  it("streams content as a few text deltas and emits each tool call", async () => {
    const { events, responses } = await runScript();
    const toolEvents = events.filter((event) => event.type === "tool_call");
    const textDeltas = events.flatMap((event) => (event.type === "text" ? [event.delta] : []));
    expect(toolEvents).toEqual(responses[0]!.toolCalls.map((call, index) => ({ type: "tool_call", index, call })));
    expect(textDeltas.length).toBeGreaterThan(1);
    expect(textDeltas.length).toBeLessThanOrEqual(4);
    expect(textDeltas.join("")).toBe(responses[1]!.content);
  });

  it("estimates usage at four characters a token unless the step overrides it", async () => {
    const messages: ChatMessage[] = [
      { role: "system", content: "12345678" }, // 8
      { role: "assistant", content: null, toolCalls: [{ id: "c", name: "search", arguments: "{}" }] }, // 0
      { role: "tool", toolCallId: "c", content: "123" }, // 3
    ];
    const model = new ScriptedModel({
      name: "usage",
      steps: [{ content: "12345" }, { content: "x", usage: { cached: 4, output: 100 } }],
    });
    expect((await model.complete({ messages, tools: [] })).usage).toEqual({ input: 3, output: 2, cached: 0, reasoning: 0 });
    expect((await model.complete({ messages, tools: [] })).usage).toEqual({ input: 3, output: 100, cached: 4, reasoning: 0 });
  });

  it("records a copy of every request it received", async () => {
    const model = new ScriptedModel({ name: "rec", steps: [{ content: "a" }, { content: "b" }] });
    const messages: ChatMessage[] = [{ role: "user", content: "first" }];
    await model.complete({ messages, tools: [searchTool], maxOutputTokens: 50, signal: new AbortController().signal });
    messages.push({ role: "assistant", content: "a" }, { role: "user", content: "second" });
    await model.complete({ messages, tools: [] });
    messages.length = 0; // the caller mutating its array later must not change what was recorded

    expect(model.requests).toEqual([
      { messages: [{ role: "user", content: "first" }], tools: [searchTool], maxOutputTokens: 50 },
      {
        messages: [
          { role: "user", content: "first" },
          { role: "assistant", content: "a" },
          { role: "user", content: "second" },
        ],
        tools: [],
      },
    ]);
  });

  it("passes each request and its step index to a step function", async () => {
    const seen: [string, number][] = [];
    const model = new ScriptedModel({
      name: "fn",
      steps: (request: ModelRequest, stepIndex) => {
        const last = request.messages.at(-1)!;
        seen.push([String(last.content), stepIndex]);
        return { content: `step ${stepIndex}`, toolCalls: [{ name: "search", arguments: { n: stepIndex } }] };
      },
    });
    await model.complete({ messages: [{ role: "user", content: "a" }], tools: [] });
    const second = await model.complete({ messages: [{ role: "user", content: "b" }], tools: [] });
    expect(seen).toEqual([
      ["a", 0],
      ["b", 1],
    ]);
    expect(second.toolCalls).toEqual([{ id: "call_1_0", name: "search", arguments: '{"n":1}' }]);
    expect(second.content).toBe("step 1");
  });

  it("rejects with an AbortError when aborted during delayMs, without emitting anything", async () => {
    const model = new ScriptedModel({ name: "slow", steps: [{ content: "too late", delayMs: 10_000 }] });
    const controller = new AbortController();
    const events: ModelStreamEvent[] = [];
    const pending = model.complete({ messages: [], tools: [], signal: controller.signal }, (e) => events.push(e));
    setTimeout(() => controller.abort(), 20);
    const start = performance.now();
    const error = await pending.catch((e: unknown) => e);
    expect((error as Error).name).toBe("AbortError");
    expect(performance.now() - start).toBeLessThan(1_000);
    expect(events).toEqual([]);
  });

  it("rejects an already-aborted signal immediately, and the aborted call still takes its step", async () => {
    const model = new ScriptedModel({ name: "x", steps: [{ content: "zero" }, { content: "one" }] });
    await expect(model.complete({ messages: [], tools: [], signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: "AbortError",
    });
    expect((await model.complete({ messages: [], tools: [] })).content).toBe("one");
    expect(model.stepsTaken).toBe(2);
  });

  it("waits delayMs before answering when not aborted", async () => {
    const model = new ScriptedModel({ name: "slow", steps: [{ content: "done", delayMs: 30 }] });
    const start = performance.now();
    expect((await model.complete({ messages: [], tools: [] })).content).toBe("done");
    expect(performance.now() - start).toBeGreaterThanOrEqual(25);
  });
});

describe("createDemoModel", () => {
  const question = "Which EU countries build the most battery cells?";

  it("adds a task with task_list when that tool is offered, then answers as a scripted demo", async () => {
    const model = createDemoModel();
    expect(model.label).toBe("scripted:demo");
    expect(model.scripted).toBe(true);
    const messages: ChatMessage[] = [
      { role: "system", content: "You are a research agent." },
      { role: "user", content: question },
    ];

    const first = await model.complete({ messages, tools: [searchTool, taskListTool] });
    expect(first.finishReason).toBe("tool_calls");
    expect(first.toolCalls).toHaveLength(1);
    expect(first.toolCalls[0]!.name).toBe("task_list");
    expect(JSON.parse(first.toolCalls[0]!.arguments)).toEqual({ action: "add", title: "Answer the question" });

    messages.push(
      { role: "assistant", content: first.content, toolCalls: first.toolCalls },
      { role: "tool", toolCallId: first.toolCalls[0]!.id, content: "Task 1 added" },
    );
    const second = await model.complete({ messages, tools: [searchTool, taskListTool] });
    expect(second.finishReason).toBe("stop");
    expect(second.toolCalls).toEqual([]);
    expect(second.content).toMatch(/scripted/i);
    expect(second.content).toMatch(/offline demo/i);
    expect(second.content).toContain(question);
  });

  it("answers straight away when task_list is not offered", async () => {
    const model = createDemoModel();
    const response = await model.complete({ messages: [{ role: "user", content: question }], tools: [searchTool] });
    expect(response.toolCalls).toEqual([]);
    expect(response.content).toMatch(/scripted offline demo/i);
    expect(response.content).toContain(question);
  });

  it("quotes the last user message and adds a task again on a new user turn", async () => {
    const model = createDemoModel();
    const messages: ChatMessage[] = [
      { role: "user", content: "first question" },
      { role: "assistant", content: null, toolCalls: [{ id: "call_0_0", name: "task_list", arguments: "{}" }] },
      { role: "tool", toolCallId: "call_0_0", content: "ok" },
      { role: "assistant", content: "answer" },
      { role: "user", content: "follow-up question" },
    ];
    const first = await model.complete({ messages, tools: [taskListTool] });
    expect(first.toolCalls.map((call) => call.name)).toEqual(["task_list"]);
    const answer = await model.complete({ messages: messages.slice(0, 4), tools: [taskListTool] });
    expect(answer.content).toContain("first question");
    expect(answer.content).not.toContain("follow-up");
    expect(model.requests).toEqual([]); // a long-lived demo instance keeps no history
  });

  const readMaterialTool: ToolSchema = { name: "read_material", description: "Reads a material", parameters: { type: "object" } };
  const context = [
    "<workspace-context>",
    'This run works in the research workspace "Batteries".',
    "",
    "Materials selected for this run when it was admitted (exact versions):",
    '- "EU cell plants" publicationId=UHVibGljYXRpb246cDE= version 2, as of 2026-01-01T00:00:00.000Z',
    '- "Second study" publicationId=UHVibGljYXRpb246cDI= version 1, as of 2026-01-02T00:00:00.000Z',
    "",
    "History catalog (complete, 0 publications):",
    "</workspace-context>",
  ].join("\n");

  it("reads the first selected material, then quotes the question (not the context) and the material's opening, labelled as Dossier's demo", async () => {
    const model = createDemoModel();
    const messages: ChatMessage[] = [{ role: "user", content: `${context}\n\n${question}` }];
    const tools = [taskListTool, readMaterialTool];
    const first = await model.complete({ messages, tools });
    expect(first.toolCalls.map((call) => [call.name, JSON.parse(call.arguments)])).toEqual([
      ["task_list", { action: "add", title: "Answer the question" }],
      ["read_material", { publicationId: "UHVibGljYXRpb246cDE=", version: 2 }],
    ]);
    messages.push(
      { role: "assistant", content: null, toolCalls: first.toolCalls },
      { role: "tool", toolCallId: first.toolCalls[0]!.id, content: "Task 1 added" },
      {
        role: "tool",
        toolCallId: first.toolCalls[1]!.id,
        content: [
          '<material title="EU cell plants" publicationId="UHVibGljYXRpb246cDE=" version="2" as-of="2026-01-01T00:00:00.000Z" sha256="ab">',
          "This is a judgement formed as of 2026-01-01T00:00:00.000Z.",
          "Northvolt and ACC build cells.",
          "</material>",
        ].join("\n"),
      },
    );
    const answer = (await model.complete({ messages, tools })).content!;
    expect(answer.split("\n\n")).toEqual([
      "[Dossier offline demo] This is a scripted offline demo reply, not an answer from a language model.",
      `You asked: "${question}"`,
      'The run was given its workspace context, which begins: This run works in the research workspace "Batteries".',
      'I read "EU cell plants" (version 2, as of 2026-01-01T00:00:00.000Z) with read_material. It begins: "Northvolt and ACC build cells."',
      "To have a language model answer, set OPENAI_API_KEY (and OPENAI_BASE_URL for any OpenAI-compatible server) and restart Dossier.",
    ]);
    // Deterministic: the same conversation, the same answer.
    expect((await createDemoModel().complete({ messages, tools })).content).toBe(answer);
  });

  it("says what read_material answered when the material could not be read, and quotes the question after a summary", async () => {
    const model = createDemoModel();
    const summary = "<system-reminder>\nSummary of the earlier conversation.\n</system-reminder>";
    const messages: ChatMessage[] = [
      { role: "user", content: `${summary}\n\n${context}\n\n${question}` },
      { role: "assistant", content: null, toolCalls: [{ id: "c1", name: "read_material", arguments: "{}" }] },
      { role: "tool", toolCallId: "c1", content: "UNAVAILABLE: version 2 of UHVibGljYXRpb246cDE= cannot be used: it was revoked." },
    ];
    const answer = (await model.complete({ messages, tools: [readMaterialTool] })).content!;
    expect(answer).toContain(`You asked: "${question}"`);
    expect(answer).toContain("it answered: UNAVAILABLE: version 2 of UHVibGljYXRpb246cDE= cannot be used: it was revoked.");
    expect(answer).not.toContain("Summary of the earlier conversation");
  });
});
