// Every payload is stored once: a tool's result and a final reply live in the conversation log;
// their trace events keep a preview and a size and read the payload from the log; a model call's
// span records its request as references to the log entries it carries as they are, a workspace
// run's context and question as the parts of the one user message they are sent as. Read back,
// each is exactly what was recorded or sent, byte for byte.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EventPayloadDocument, SpanRequestDocument } from "../../sdk/generated/graphql.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { reportPage, reportReadingModel, reportTool, storedBytes } from "../support/long-tool-run.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const rawId = (globalId: string) => Buffer.from(globalId, "base64").toString().split(":")[1]!;

// Shown to the model with ␀ (so the request differs from the log entry), cleared once its turn is
// complete ("always"), and spilled: three ways a request message is not its log entry as it is.
const withNul = `a result holding a NUL here:\u0000 and a lone surrogate \ud800, ${"n".repeat(3_000)}`;
const huge = `${"h".repeat(50_000)} end`;
const fixed = (name: string, output: string): Tool => ({
  schema: { name, description: name, parameters: { type: "object" } },
  execute: async () => output,
});

describe.each(backends)("payloads stored once on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("a 10-turn run with 20,000-character results stores its trace in under a quarter of its log, and reads every payload and request back exactly", async () => {
    const model = reportReadingModel(10, (turn) =>
      turn === 2 ? [{ name: "odd_text", arguments: {} }] : turn === 4 ? [{ name: "huge_text", arguments: {} }] : [],
    );
    t = await startTestApp(backend, {
      runtime: {
        model,
        extraTools: [reportTool(20_000), fixed("odd_text", withNul), fixed("huge_text", huge)],
        compactionPolicies: { odd_text: "always" },
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")),
      },
    });
    const { run } = await admit(t.client, { question: "Read the report", limits: { maxTurns: 12, tokenBudget: 5_000_000 } });
    const done = await settled(t.client, run.id, 60_000);
    expect({ status: done.status, failure: done.failureReason }).toEqual({ status: "SUCCEEDED", failure: null });

    // Tool results and the final reply: the event refers to the log; its payload reads back exactly.
    const tools = done.trace!.spans.filter((span) => span.kind === "TOOL_CALL");
    expect(tools).toHaveLength(12);
    const pages = tools.filter((span) => span.name === "execute_tool fetch_report");
    const payloadOf = async (span: (typeof tools)[number]) => {
      const event = span.events.find((e) => e.kind === "TOOL_OUTPUT")!;
      return expectType((await t!.client.request(EventPayloadDocument, { id: event.id })).node!, "SpanEvent").payload;
    };
    expect(await Promise.all(pages.map(payloadOf))).toEqual(pages.map((_, page) => reportPage(page, 20_000)));
    expect(await payloadOf(tools.find((span) => span.name === "execute_tool odd_text")!)).toBe(withNul);
    expect(await payloadOf(tools.find((span) => span.name === "execute_tool huge_text")!)).toContain("[Spilled result of huge_text");
    const stored = await t.app.db.prisma.spanEvent.findMany({
      where: { span: { traceId: rawId(run.id) }, kind: { in: ["TOOL_OUTPUT", "FINAL_REPLY"] } },
      select: { kind: true, payload: true, messageId: true, payloadSize: true },
    });
    const referenced = stored.filter((event) => event.messageId !== null);
    // Every result but the spilled one (whose event holds the preview the model saw) and the reply.
    expect(referenced).toHaveLength(12);
    expect(referenced.every((event) => event.payload === "")).toBe(true);
    const reply = done.trace!.spans.flatMap((span) => span.events).find((e) => e.kind === "FINAL_REPLY")!;
    expect(expectType((await t.client.request(EventPayloadDocument, { id: reply.id })).node!, "SpanEvent").payload).toBe("done");

    // Each model call's request reads back as exactly what the model was sent.
    const calls = done.trace!.spans.filter((span) => span.kind === "MODEL_CALL");
    expect(calls).toHaveLength(model.requests.length);
    for (const [index, call] of calls.entries()) {
      const request = expectType((await t.client.request(SpanRequestDocument, { id: call.id })).node!, "Span").request!;
      expect(request).toBe(JSON.stringify(model.requests[index]!.messages));
    }
    // All of them in one GraphQL request (their log entries read together): the same messages.
    const together = await t.app.yoga.fetch(
      new Request("http://dossier.test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          query: `query($id: ID!) { node(id: $id) { ... on Run { trace { ... on Trace { spans { edges { node { kind request } } } } } } } }`,
          variables: { id: run.id },
        }),
      }),
    );
    const { data } = (await together.json()) as { data: { node: { trace: { spans: { edges: { node: { kind: string; request: string | null } }[] } } } } };
    const requests = data.node.trace.spans.edges
      .map((edge) => edge.node)
      .filter((span) => span.kind === "MODEL_CALL")
      .map((span) => span.request);
    expect(requests).toEqual(model.requests.map((request) => JSON.stringify(request.messages)));
    // What the last request holds inline: the system prompt and the three messages the log does not hold as sent.
    const last = JSON.parse(calls.at(-1)!.attributes) as { request: ({ logMessage: string } | { role: string; content: string })[] };
    const inline = last.request.filter((message) => !("logMessage" in message)) as { role: string; content: string }[];
    expect(inline.map((message) => message.role)).toEqual(["system", "tool", "tool"]);
    expect(inline[1]!.content).toMatch(/^\[earlier result of odd_text cleared/);
    expect(inline[2]!.content).toContain("[Spilled result of huge_text");
    expect(inline.map((message) => message.content).join("")).not.toContain("r".repeat(1_000));

    const bytes = await storedBytes(t.app.db, rawId(run.id));
    expect(bytes.log).toBeGreaterThan(10 * 20_000);
    expect(bytes.trace / bytes.log).toBeLessThan(0.25);
  }, 90_000);

  it("a workspace run's context, sent with the question in one user message, is stored once and read back exactly", async () => {
    const model = reportReadingModel(4);
    t = await startTestApp(backend, {
      runtime: { model, extraTools: [reportTool(2_000)], sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")) },
    });
    const workspace = await createWorkspace(t.client);
    const material = await publish(t.client, { title: "EU cell plants", content: "Plants and capacities." });
    const { run } = await admit(t.client, {
      workspaceId: workspace.id,
      question: "Read the report",
      materials: [{ publicationId: material.version.publication.id, version: 1 }],
    });
    const done = await settled(t.client, run.id, 60_000);
    expect(done.status).toBe("SUCCEEDED");
    const context = done.messages.edges.find((edge) => edge.node.role === "CONTEXT")!.node.content;
    expect(context).toContain('"EU cell plants"');

    const calls = done.trace!.spans.filter((span) => span.kind === "MODEL_CALL");
    expect(calls).toHaveLength(5);
    for (const [index, call] of calls.entries()) {
      // Sent: the context, then the question, in one user message after the system prompt.
      expect(model.requests[index]!.messages[1]).toEqual({ role: "user", content: `${context}\n\nRead the report` });
      // Recorded: references to the two log entries, never the context's text.
      const recorded = JSON.parse(call.attributes) as { request: unknown[] };
      expect(recorded.request[1]).toEqual({ role: "user", parts: [{ logMessage: expect.any(String) }, { text: "\n\n" }, { logMessage: expect.any(String) }] });
      expect(call.attributes).not.toContain("workspace-context");
      const request = expectType((await t.client.request(SpanRequestDocument, { id: call.id })).node!, "Span").request!;
      expect(request).toBe(JSON.stringify(model.requests[index]!.messages));
    }
  }, 90_000);
});
