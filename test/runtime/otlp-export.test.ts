// T6: finished spans exported over OTLP/HTTP with GenAI semantic-convention names and attributes.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { CreateScoreConfigDocument, CreateScoreDocument } from "../../sdk/generated/graphql.js";
import { admit, expectType, publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string } }[];
  status: { code: number };
};

type OtlpLogRecord = {
  eventName: string;
  traceId: string;
  spanId: string;
  timeUnixNano: string;
  attributes: { key: string; value: { stringValue?: string; doubleValue?: number } }[];
};

describe("OTLP export", () => {
  let t: TestApp | undefined;
  let collector: Server | undefined;
  afterEach(async () => {
    await t?.close();
    await new Promise((resolve) => (collector ? collector.close(resolve) : resolve(undefined)));
    t = undefined;
    collector = undefined;
  });

  async function startCollector(status = 200) {
    const received: OtlpSpan[] = [];
    const logs: OtlpLogRecord[] = [];
    collector = createServer(async (req, res) => {
      const parts: Buffer[] = [];
      for await (const part of req) parts.push(part as Buffer);
      if (req.url === "/v1/traces" && status === 200) {
        const body = JSON.parse(Buffer.concat(parts).toString("utf8"));
        received.push(...body.resourceSpans[0].scopeSpans[0].spans);
      }
      if (req.url === "/v1/logs" && status === 200) {
        const body = JSON.parse(Buffer.concat(parts).toString("utf8"));
        logs.push(...body.resourceLogs[0].scopeLogs[0].logRecords);
      }
      res.writeHead(status).end("{}");
    });
    collector.listen(0, "127.0.0.1");
    await once(collector, "listening");
    return { endpoint: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`, received, logs };
  }

  async function runOnce(endpoint: string) {
    const model = new ScriptedModel({
      name: "otlp",
      steps: [
        { toolCalls: [{ name: "task_list", arguments: { action: "list" } }], usage: { input: 50, output: 5 } },
        { content: "done", usage: { input: 70, output: 9 } },
      ],
    });
    t = await startTestApp("pglite", {
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-otlp-")), otlpEndpoint: endpoint },
    });
    const { run } = await admit(t.client, { question: "export me" });
    for (let i = 0; i < 300; i += 1) {
      const view = (await t.client.runTrace(run.id))!;
      // The run and its trace are read in one statement: an ended trace comes with its settled run.
      if (view.trace?.endedAt) return view;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error("run did not finish");
  }

  const attr = (span: OtlpSpan, key: string) => {
    const value = span.attributes.find((a) => a.key === key)?.value;
    return value?.stringValue ?? value?.intValue;
  };

  it("exports the run's spans as invoke_agent, chat and execute_tool with gen_ai.usage", async () => {
    const { endpoint, received } = await startCollector();
    const run = await runOnce(endpoint);
    const byName = (prefix: string) => received.filter((s) => s.name.startsWith(prefix));
    // The root span is handed to the exporter right after its commit, which a poll may see first.
    for (const deadline = Date.now() + 5_000; byName("invoke_agent ").length === 0 && Date.now() < deadline; ) {
      await t!.app.exporter!.flush();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const [agent] = byName("invoke_agent ");
    const chats = byName("chat ");
    const [tool] = byName("execute_tool ");
    expect(agent).toMatchObject({ name: "invoke_agent researcher", status: { code: 1 } });
    expect(attr(agent!, "gen_ai.operation.name")).toBe("invoke_agent");
    expect(
      chats.map((c) => [
        attr(c, "gen_ai.operation.name"),
        attr(c, "gen_ai.request.model"),
        attr(c, "gen_ai.usage.input_tokens"),
        attr(c, "gen_ai.usage.output_tokens"),
      ]),
    ).toEqual([
      ["chat", "otlp", "50", "5"],
      ["chat", "otlp", "70", "9"],
    ]);
    expect(tool).toMatchObject({ name: "execute_tool task_list" });
    expect(attr(tool!, "gen_ai.tool.name")).toBe("task_list");
    expect(new Set(received.map((s) => s.traceId)).size).toBe(1);
    expect(received[0]!.traceId).toMatch(/^[0-9a-f]{32}$/);
    const ids = new Set(received.map((s) => s.spanId));
    expect(received.filter((s) => s.parentSpanId).every((s) => ids.has(s.parentSpanId!))).toBe(true);
    expect(received).toHaveLength(run.trace!.spans.length);
  });

  it("exports a score on a span or a run as a gen_ai.evaluation.result event parented to that span, and none for a publication version", async () => {
    const { endpoint, received, logs } = await startCollector();
    const run = await runOnce(endpoint);
    const client = t!.client;
    const config = async (input: Record<string, unknown>) =>
      expectType((await client.request(CreateScoreConfigDocument, { input: input as never })).createScoreConfig, "CreateScoreConfigSuccess");
    await config({ name: "helpfulness", kind: "NUMERIC", min: 0, max: 1 });
    await config({ name: "tool_choice", kind: "CATEGORICAL", categories: ["right", "wrong"] });
    const tool = run.trace!.spans.find((span) => span.kind === "TOOL_CALL")!;
    const score = async (input: Record<string, unknown>) =>
      expectType((await client.request(CreateScoreDocument, { input: { source: "HUMAN", ...input } as never })).createScore, "CreateScoreSuccess");
    await score({ targetId: run.id, configName: "helpfulness", value: 0.75, comment: "answered, briefly" });
    await score({ targetId: tool.id, configName: "tool_choice", label: "right", source: "CODE" });
    const version = await publish(client, { title: "Not a span", content: "x" });
    await score({ targetId: version.version.id, configName: "helpfulness", value: 1 });
    // The exporter's own timer may be sending them already: flush until both arrived.
    for (const deadline = Date.now() + 5_000; logs.length < 2 && Date.now() < deadline; ) {
      await t!.app.exporter!.flush();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await t!.app.exporter!.flush();

    const value = (record: OtlpLogRecord, key: string) => {
      const v = record.attributes.find((a) => a.key === key)?.value;
      return v?.stringValue ?? v?.doubleValue;
    };
    expect(logs.map((record) => record.eventName)).toEqual(["gen_ai.evaluation.result", "gen_ai.evaluation.result"]);
    const onRun = logs.find((record) => value(record, "gen_ai.evaluation.name") === "helpfulness")!;
    const onTool = logs.find((record) => value(record, "gen_ai.evaluation.name") === "tool_choice")!;
    expect([
      value(onRun, "gen_ai.evaluation.score.value"),
      value(onRun, "gen_ai.evaluation.explanation"),
      value(onRun, "gen_ai.evaluation.score.label"),
    ]).toEqual([0.75, "answered, briefly", undefined]);
    expect([value(onTool, "gen_ai.evaluation.score.label"), value(onTool, "gen_ai.evaluation.score.value"), value(onTool, "dossier.score.source")]).toEqual([
      "right",
      undefined,
      "CODE",
    ]);
    // Each event belongs to the exported span it judges: the run's invoke_agent span, the tool's execute_tool span.
    for (let i = 0; received.length < run.trace!.spans.length && i < 100; i += 1) {
      await t!.app.exporter!.flush();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const spanOf = (record: OtlpLogRecord) => received.find((span) => span.spanId === record.spanId && span.traceId === record.traceId)?.name;
    expect([spanOf(onRun), spanOf(onTool)]).toEqual(["invoke_agent researcher", "execute_tool task_list"]);
  });

  it("never lets a failing collector affect the run", async () => {
    const { endpoint } = await startCollector(503);
    const run = await runOnce(endpoint);
    await t!.app.exporter!.flush();
    expect(run.status).toBe("SUCCEEDED");
  });
});
