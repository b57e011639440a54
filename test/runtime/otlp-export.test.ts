// T6: finished spans exported over OTLP/HTTP with GenAI semantic-convention names and attributes.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { admit } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string } }[];
  status: { code: number };
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
    collector = createServer(async (req, res) => {
      const parts: Buffer[] = [];
      for await (const part of req) parts.push(part as Buffer);
      if (req.url === "/v1/traces" && status === 200) {
        const body = JSON.parse(Buffer.concat(parts).toString("utf8"));
        received.push(...body.resourceSpans[0].scopeSpans[0].spans);
      }
      res.writeHead(status).end("{}");
    });
    collector.listen(0, "127.0.0.1");
    await once(collector, "listening");
    return { endpoint: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`, received };
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

  it("never lets a failing collector affect the run", async () => {
    const { endpoint } = await startCollector(503);
    const run = await runOnce(endpoint);
    await t!.app.exporter!.flush();
    expect(run.status).toBe("SUCCEEDED");
  });
});
