// EDIT decisions (issue 38, point 4): a person approves a held call with arguments of their own.
// Arguments that do not fit the tool's input schema are refused with a ValidationError naming the
// field, and nothing changes: the request stays open and the run keeps waiting. Valid ones run:
// the tool receives exactly them, the log keeps what the model asked, the result tells the model
// which arguments ran, and the call's span records both and who edited. On both databases.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DecideToolCallDocument, RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { admit, expectType } from "../support/fixtures.js";
import { readmeBlocks } from "../support/readme.js";
import { callTools, recordedDecisions, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

describe.each(["pglite", "postgres"] as const)("EDIT decisions (%s)", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("refuses arguments that do not fit the schema and runs the tool with exactly the edited ones", async () => {
    const received: unknown[] = [];
    const publish: Tool = {
      schema: {
        name: "publish_post",
        description: "publishes a post",
        parameters: {
          type: "object",
          properties: { title: { type: "string" }, tags: { type: "array", items: { type: "string" } } },
          required: ["title"],
        },
      },
      execute: async (args) => {
        received.push(args);
        return `published ${JSON.stringify(args)}`;
      },
    };
    t = await startTestApp(backend, {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-edit-")),
        extraTools: [publish],
        approvals: { rules: { publish_post: "always" } },
      },
    });
    const client = t.client;
    const { run } = await admit(client, { question: callTools({ name: "publish_post", arguments: { title: "Draft", tags: ["x"] } }) });
    const waiting = async () => expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
    const held = await waitUntil(async () => {
      const current = await waiting();
      return current.status === "WAITING" ? current.pendingApprovals.edges[0]!.node : undefined;
    });
    const decide = (input: Record<string, unknown>) =>
      client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: held.toolCallId, decision: "EDIT", ...input } });

    const wrongType = expectType((await decide({ arguments: { title: "Final", tags: ["ok", 7] } })).decideToolCall, "ValidationError");
    expect(wrongType.issues).toEqual([expect.objectContaining({ field: "arguments.tags.1" })]);
    const missing = expectType((await decide({ arguments: { tags: [] } })).decideToolCall, "ValidationError");
    expect(missing.issues.map((issue) => issue.field)).toEqual(["arguments.title"]);
    expect(expectType((await decide({})).decideToolCall, "ValidationError").issues[0]!.field).toBe("arguments");
    const approveWithArguments = await decide({ decision: "APPROVE", arguments: { title: "x" } });
    expect(expectType(approveWithArguments.decideToolCall, "ValidationError").issues[0]!.field).toBe("arguments");
    // Nothing changed: the same request still waits, undecided, and so does the run.
    const still = await waiting();
    expect(still.status).toBe("WAITING");
    expect(still.pendingApprovals.edges.map((edge) => [edge.node.toolCallId, edge.node.decision])).toEqual([[held.toolCallId, null]]);
    expect(received).toEqual([]);

    const edited = { title: "Final", tags: ["reviewed"] };
    const decided = expectType((await decide({ arguments: edited })).decideToolCall, "DecideToolCallSuccess");
    expect(decided.approval).toMatchObject({ decision: "EDIT", arguments: '{"title":"Draft","tags":["x"]}', editedArguments: JSON.stringify(edited) });

    const done = await settled(client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(received).toEqual([edited]);
    // The model is told which arguments ran; its own request stays in the log as it asked.
    expect(done.answer).toContain(`it ran with: ${JSON.stringify(edited)}`);
    expect(done.answer).toContain(`published ${JSON.stringify(edited)}`);
    // The only conversation of this database.
    const asked = await t.app.db.prisma.message.findMany({ where: { role: "ASSISTANT" }, orderBy: { seq: "asc" } });
    expect(asked[0]!.toolCalls).toEqual([expect.objectContaining({ name: "publish_post", arguments: '{"title":"Draft","tags":["x"]}' })]);

    const [recorded] = recordedDecisions(done);
    expect(recorded).toMatchObject({ decision: "EDIT", originalArguments: '{"title":"Draft","tags":["x"]}', editedArguments: JSON.stringify(edited) });
    const span = done.trace!.spans.find((s) => s.kind === "TOOL_CALL" && s.attributes.includes('"dossier.approval":"EDIT"'))!;
    const attributes = JSON.parse(span.attributes) as Record<string, unknown>;
    expect(attributes["gen_ai.tool.call.arguments.original"]).toBe('{"title":"Draft","tags":["x"]}');
    expect(attributes["gen_ai.tool.call.arguments"]).toBe(JSON.stringify(edited));
    expect(attributes["dossier.approval.editedBy"]).toBe(recorded!.decidedBy);
    expect(recorded!.decidedBy).not.toBeNull();
  });
});

// The README's EDIT example ("Regenerate and edit"), as written, on a call held for approval: the
// README's own server runs without TOOL_APPROVALS, so the example is run here, where a call waits.
describe("the README's EDIT example", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("approves the held call with the README's arguments, and the tool runs with exactly them", async () => {
    const example = readmeBlocks().find((block) => block.text.includes("decision: EDIT"));
    expect(example).toBeDefined();
    const received: unknown[] = [];
    const publish: Tool = {
      schema: {
        name: "publish_post",
        description: "publishes a post",
        parameters: { type: "object", properties: { title: { type: "string" } }, required: ["title"] },
      },
      execute: async (args) => {
        received.push(args);
        return "published";
      },
    };
    t = await startTestApp("pglite", {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-edit-readme-")),
        extraTools: [publish],
        approvals: { rules: { publish_post: "always" } },
      },
    });
    const { client } = t;
    const { run } = await admit(client, { question: callTools({ name: "publish_post", arguments: { title: "Q3 report" } }) });
    const held = await waitUntil(async () => {
      const current = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return current.status === "WAITING" ? current.pendingApprovals.edges[0]!.node : undefined;
    });
    const query = example!.text.replace('"<run id>"', JSON.stringify(run.id)).replace('"<toolCallId from pendingApprovals>"', JSON.stringify(held.toolCallId));
    const response = await t.app.yoga.fetch(
      new Request("http://dossier.test/graphql", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query }) }),
    );
    const { data, errors } = (await response.json()) as { data?: { decideToolCall: Record<string, unknown> }; errors?: unknown };
    expect(errors).toBeUndefined();
    expect(data!.decideToolCall).toMatchObject({
      __typename: "DecideToolCallSuccess",
      approval: { decision: "EDIT", editedArguments: '{"title":"Q3 report (draft)"}' },
    });
    expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
    expect(received).toEqual([{ title: "Q3 report (draft)" }]);
  });
});

// A tool's schema is the tool's (an MCP server's, any principal's program): one with a pattern that
// backtracks exponentially cannot stall the instance that takes an EDIT decision. The pattern is
// not applied here; the tool checks its own arguments.
describe("an EDIT decision against a schema with a hostile pattern", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  // With the pattern applied, this one decision would take one thread for hours (and the test time out).
  it("is taken, the pattern not applied, and the tool runs with exactly the edited arguments", async () => {
    const received: unknown[] = [];
    const search: Tool = {
      schema: { name: "search", description: "searches", parameters: { type: "object", properties: { q: { type: "string", pattern: "^(a+)+$" } } } },
      execute: async (args) => {
        received.push(args);
        return "found";
      },
    };
    t = await startTestApp("pglite", {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-edit-pattern-")),
        extraTools: [search],
        approvals: { rules: { search: "always" } },
      },
    });
    const { client } = t;
    const { run } = await admit(client, { question: callTools({ name: "search", arguments: { q: "aaa" } }) });
    const held = await waitUntil(async () => {
      const current = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return current.status === "WAITING" ? current.pendingApprovals.edges[0]!.node : undefined;
    });
    const edited = { q: `${"a".repeat(40)}!` };
    const decided = await client.request(DecideToolCallDocument, {
      input: { runId: run.id, toolCallId: held.toolCallId, decision: "EDIT", arguments: edited },
    });
    expect(expectType(decided.decideToolCall, "DecideToolCallSuccess").approval).toMatchObject({ decision: "EDIT", editedArguments: JSON.stringify(edited) });
    expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
    expect(received).toEqual([edited]);
  });
});

// A number a person writes in EDIT arguments runs as written or not at all: 9007199254740993 in a
// raw JSON body (a variable) or in the query's text (a literal) would reach the tool as
// 9007199254740992, so it is refused, naming its path, and the call keeps waiting.
describe("an EDIT decision holding a number JSON cannot keep exactly", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("is refused with a ValidationError naming the number, as a variable and as a literal; the tool never gets it", async () => {
    const received: unknown[] = [];
    const transfer: Tool = {
      schema: { name: "transfer", description: "transfers", parameters: { type: "object", properties: { account: { type: "number" } } } },
      execute: async (args) => {
        received.push(args);
        return "sent";
      },
    };
    t = await startTestApp("pglite", {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-edit-number-")),
        extraTools: [transfer],
        approvals: { rules: { transfer: "always" } },
      },
    });
    const { client, app } = t;
    const { run } = await admit(client, { question: callTools({ name: "transfer", arguments: { account: 1 } }) });
    const held = await waitUntil(async () => {
      const current = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return current.status === "WAITING" ? current.pendingApprovals.edges[0]!.node : undefined;
    });
    const post = async (body: string) => {
      const response = await app.yoga.fetch(
        new Request("http://dossier.test/graphql", { method: "POST", headers: { "content-type": "application/json" }, body }),
      );
      return ((await response.json()) as { data: { decideToolCall: { __typename: string; issues?: { field: string }[] } } }).data.decideToolCall;
    };
    const selection = "{ __typename ... on ValidationError { issues { field } } }";
    const asVariable = `{"query":"mutation($input: DecideToolCallInput!) { decideToolCall(input: $input) ${selection} }","variables":{"input":{"runId":"${run.id}","toolCallId":"${held.toolCallId}","decision":"EDIT","arguments":{"account":9007199254740993}}}}`;
    expect(await post(asVariable)).toEqual({ __typename: "ValidationError", issues: [{ field: "arguments.account" }] });
    const literal = `mutation { decideToolCall(input: { runId: "${run.id}", toolCallId: "${held.toolCallId}", decision: EDIT, arguments: { account: 9007199254740993 } }) ${selection} }`;
    expect(await post(JSON.stringify({ query: literal }))).toEqual({ __typename: "ValidationError", issues: [{ field: "arguments.account" }] });
    const still = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
    expect(still.status).toBe("WAITING");
    expect(received).toEqual([]);
  });
});
