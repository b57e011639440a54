// The role order of a request, built from the log alone: a run's context and question reach the
// model as one user message (context first), user messages in a row are joined, a run that ended
// after tool results is followed by a neutral note before the next question (another note before
// a person's steering input that arrived while the run worked), and every request is
// one a strict chat template accepts. Each recorded request reads back byte for byte, the context
// as a reference to its log entry.
import { describe, expect, it } from "vitest";
import { JOIN_SEPARATOR, type LoggedMessage, type RecordedMessage, resolveRequest } from "../../src/domain/trace/recorded-request.js";
import { toStored } from "../../src/domain/text/stored-text.js";
import type { Message } from "../../src/generated/prisma/client.js";
import { planContext } from "../../src/runtime/memory/context-plan.js";
import { repairNote } from "../../src/runtime/memory/repair.js";
import { NO_ANSWER_NOTE, STEERED_NOTE } from "../../src/runtime/memory/request-turns.js";
import { emptySections, type StoredSummary } from "../../src/runtime/memory/summary.js";
import { chatTemplateViolations } from "../support/chat-template.js";

const CONTEXT_1 = '<workspace-context>\nMaterials selected for this run: "Cells" version 1\n</workspace-context>';
const CONTEXT_2 = '<workspace-context>\nMaterials selected for this run: "Cells" version 2\n</workspace-context>';

type Entry = Partial<Message> & Pick<Message, "role">;

function logOf(entries: Entry[]): Message[] {
  return entries.map((entry, index) => ({
    id: `m${index + 1}`,
    conversationId: "c1",
    seq: index + 1,
    content: "",
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    runId: "r1",
    createdAt: new Date(0),
    ...entry,
  }));
}

const call = (id: string) => ({ id, name: "search", arguments: "{}" });
const plan = (log: Message[], runId: string, summaryOverride?: StoredSummary) =>
  planContext({ systemPrompt: "sys", log, tools: [], contextWindow: 128_000, runId, ...(summaryOverride && { summaryOverride }) });

/** The log as resolveRequest reads it from the database: stored text, looked up by id. */
const lookupIn = (log: Message[]) => async (ids: string[]) =>
  new Map(log.filter((m) => ids.includes(m.id)).map((m): [string, LoggedMessage] => [m.id, { ...m, content: toStored(m.content) }]));

async function expectExactReadBack(log: Message[], built: { messages: unknown[]; recorded: RecordedMessage[] }) {
  expect(JSON.stringify(await resolveRequest(lookupIn(log), built.recorded))).toBe(JSON.stringify(built.messages));
}

describe("the strict chat-template check (test support)", () => {
  const user = { role: "user", content: "q" };
  const reply = { role: "assistant", content: "a" };
  const asks = { role: "assistant", content: null, toolCalls: [{ id: "c1" }, { id: "c2" }] };
  const result = (id: string) => ({ role: "tool", toolCallId: id, content: "r" });

  it("accepts a system prompt, a question and an agent loop ending in results or a question", () => {
    expect(chatTemplateViolations([{ role: "system", content: "s" }, user, asks, result("c2"), result("c1"), asks, result("c1"), result("c2")])).toEqual([]);
    expect(chatTemplateViolations([user, asks, result("c1"), result("c2"), reply, user])).toEqual([]);
  });

  it("rejects two user messages in a row, a user message after tool results, two replies in a row and a late system message", () => {
    expect(chatTemplateViolations([{ role: "system", content: "s" }, user, user])).toEqual(["message 2 (user): a user message where the assistant must speak"]);
    expect(chatTemplateViolations([user, asks, result("c1"), result("c2"), user])).toEqual(["message 4 (user): a user message where the assistant must speak"]);
    expect(chatTemplateViolations([user, reply, reply, user])).toEqual(["message 2 (assistant): an assistant message where the user must speak"]);
    expect(chatTemplateViolations([user, reply, { role: "system", content: "s" }, user])).toEqual(["message 2 (system): a system message only comes first"]);
  });

  it("rejects unanswered, unknown and repeated results, a reply first, and a request ending with a reply", () => {
    expect(chatTemplateViolations([user, asks, result("c1"), reply, user])).toEqual(["message 3 (assistant): tool calls c2 are not answered"]);
    expect(chatTemplateViolations([user, asks, result("c1"), result("c1"), result("c2")])).toEqual([
      "message 3 (tool): a result for c1, which no open call asked for",
    ]);
    expect(chatTemplateViolations([user, result("c1")])).toEqual(["message 1 (tool): a result for c1, which no open call asked for"]);
    expect(chatTemplateViolations([reply, user])).toEqual(["message 0 (assistant): an assistant message where the user must speak"]);
    expect(chatTemplateViolations([user, reply])).toEqual(["end: the request ends with the assistant's reply"]);
    expect(chatTemplateViolations([user, asks, result("c1")])).toEqual(["end: tool calls c2 are not answered"]);
  });
});

describe("a request's role order", () => {
  it("gives a workspace run its context and question as one user message, context first, the context stored once", async () => {
    const log = logOf([
      { role: "USER", content: "Who makes cells in Europe?" },
      { role: "CONTEXT", content: CONTEXT_1 },
    ]);
    const built = plan(log, "r1");
    expect(built.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: `${CONTEXT_1}${JOIN_SEPARATOR}Who makes cells in Europe?` },
    ]);
    expect(chatTemplateViolations(built.messages)).toEqual([]);
    // Both entries are references: the context's text is not copied into the span.
    expect(built.recorded[1]).toEqual({ role: "user", parts: [{ logMessage: "m2" }, { text: JOIN_SEPARATOR }, { logMessage: "m1" }] });
    expect([...built.carried].sort()).toEqual(["m1", "m2"]);
    await expectExactReadBack(log, built);
  });

  it("keeps each run's context with its own question across the runs of a conversation", async () => {
    const log = logOf([
      { role: "USER", content: "First question", runId: "r1" },
      { role: "CONTEXT", content: CONTEXT_1, runId: "r1" },
      { role: "ASSISTANT", content: "First answer", runId: "r1" },
      { role: "USER", content: "Second question", runId: "r2" },
      { role: "CONTEXT", content: CONTEXT_2, runId: "r2" },
    ]);
    const built = plan(log, "r2");
    expect(built.messages.map((m) => [m.role, m.content])).toEqual([
      ["system", "sys"],
      ["user", `${CONTEXT_1}${JOIN_SEPARATOR}First question`],
      ["assistant", "First answer"],
      ["user", `${CONTEXT_2}${JOIN_SEPARATOR}Second question`],
    ]);
    expect(chatTemplateViolations(built.messages)).toEqual([]);
    await expectExactReadBack(log, built);
  });

  it("joins the question of a run that got no answer with the next run's", async () => {
    const log = logOf([
      { role: "USER", content: "First question", runId: "r1" },
      { role: "CONTEXT", content: CONTEXT_1, runId: "r1" },
      { role: "USER", content: "Second question", runId: "r2" },
      { role: "CONTEXT", content: CONTEXT_2, runId: "r2" },
    ]);
    const built = plan(log, "r2");
    expect(built.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: [CONTEXT_1, "First question", CONTEXT_2, "Second question"].join(JOIN_SEPARATOR) },
    ]);
    expect(chatTemplateViolations(built.messages)).toEqual([]);
    await expectExactReadBack(log, built);
  });

  it("puts a neutral note between a run that stopped after tool results and the next question", async () => {
    const log = logOf([
      { role: "USER", content: "First question", runId: "r1" },
      { role: "ASSISTANT", content: "", toolCalls: [call("c1")], runId: "r1" },
      { role: "TOOL", content: "found", toolCallId: "c1", toolName: "search", runId: "r1" },
      { role: "USER", content: "Second question", runId: "r2" },
    ]);
    const built = plan(log, "r2");
    expect(built.messages.slice(3)).toEqual([
      { role: "tool", toolCallId: "c1", content: "found" },
      { role: "assistant", content: NO_ANSWER_NOTE },
      { role: "user", content: "Second question" },
    ]);
    expect(chatTemplateViolations(built.messages)).toEqual([]);
    await expectExactReadBack(log, built);
  });

  it("puts the steering note between a run's tool results and a person's input to it, which stays where the log has it", async () => {
    const log = logOf([
      { role: "USER", content: "Question", runId: "r1" },
      { role: "CONTEXT", content: CONTEXT_1, runId: "r1" },
      { role: "ASSISTANT", content: "", toolCalls: [call("c1")], runId: "r1" },
      { role: "TOOL", content: "found", toolCallId: "c1", toolName: "search", runId: "r1" },
      { role: "USER", content: "Only 2025, please.", runId: "r1" },
      { role: "USER", content: "And in euros.", runId: "r1" },
    ]);
    const built = plan(log, "r1");
    expect(built.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: [CONTEXT_1, "Question"].join(JOIN_SEPARATOR) },
      { role: "assistant", content: null, toolCalls: [call("c1")] },
      { role: "tool", toolCallId: "c1", content: "found" },
      { role: "assistant", content: STEERED_NOTE },
      { role: "user", content: ["Only 2025, please.", "And in euros."].join(JOIN_SEPARATOR) },
    ]);
    expect(chatTemplateViolations(built.messages)).toEqual([]);
    await expectExactReadBack(log, built);
  });

  it("answers a call an interrupted run left dangling with its repair note, then the note, then the question", async () => {
    const log = logOf([
      { role: "USER", content: "First question", runId: "r1" },
      { role: "ASSISTANT", content: "", toolCalls: [call("c1")], runId: "r1" },
      { role: "USER", content: "Second question", runId: "r2" },
      { role: "REPAIR", content: repairNote(call("c1")), toolCallId: "c1", toolName: "search", runId: "r2" },
      { role: "CONTEXT", content: CONTEXT_2, runId: "r2" },
    ]);
    const built = plan(log, "r2");
    expect(built.messages.slice(3).map((m) => [m.role, m.content])).toEqual([
      ["tool", repairNote(call("c1"))],
      ["assistant", NO_ANSWER_NOTE],
      ["user", `${CONTEXT_2}${JOIN_SEPARATOR}Second question`],
    ]);
    expect(chatTemplateViolations(built.messages)).toEqual([]);
    await expectExactReadBack(log, built);
  });

  it("after a summary that folded the current input, reads summary, context and question as one user message and never loses the context", async () => {
    const log = logOf([
      { role: "USER", content: "The question" },
      { role: "CONTEXT", content: CONTEXT_1 },
      { role: "ASSISTANT", content: "", toolCalls: [call("c1")] },
      { role: "TOOL", content: "first result", toolCallId: "c1", toolName: "search" },
      { role: "ASSISTANT", content: "", toolCalls: [call("c2")] },
      { role: "TOOL", content: "second result", toolCallId: "c2", toolName: "search" },
    ]);
    const summary: StoredSummary = {
      format: "dossier.summary.v1",
      coversThroughSeq: 4,
      foldedFromSeq: 1,
      turnsFolded: 1,
      sections: { ...emptySections(), currentState: "searched once" },
    };
    const built = plan(log, "r1", summary);
    expect(built.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    const input = built.messages[1]!.content!;
    expect(input).toMatch(/^<system-reminder>[\s\S]*searched once[\s\S]*<\/system-reminder>/);
    expect(input.endsWith(`${JOIN_SEPARATOR}${CONTEXT_1}${JOIN_SEPARATOR}The question`)).toBe(true);
    expect(chatTemplateViolations(built.messages)).toEqual([]);
    // The summary is inline (the log holds no such text); the context and the question are references.
    expect(built.recorded[1]).toEqual({
      role: "user",
      parts: [{ text: expect.stringMatching(/^<system-reminder>[\s\S]*\n\n$/) }, { logMessage: "m2" }, { text: JOIN_SEPARATOR }, { logMessage: "m1" }],
    });
    await expectExactReadBack(log, built);
  });

  it("shows a NUL in a question as ␀ and records that part as the text sent", async () => {
    const log = logOf([
      { role: "USER", content: "a NUL:\u0000 here" },
      { role: "CONTEXT", content: CONTEXT_1 },
    ]);
    const built = plan(log, "r1");
    expect(built.messages[1]!.content).toBe(`${CONTEXT_1}${JOIN_SEPARATOR}a NUL:␀ here`);
    expect(built.recorded[1]).toEqual({ role: "user", parts: [{ logMessage: "m2" }, { text: `${JOIN_SEPARATOR}a NUL:␀ here` }] });
    await expectExactReadBack(log, built);
  });
});
