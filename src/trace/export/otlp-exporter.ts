// Optional OTLP/HTTP (JSON) export of finished spans, named and attributed after the
// OpenTelemetry GenAI semantic conventions: `invoke_agent {agent}`, `chat {model}`,
// `execute_tool {tool}`, `gen_ai.usage.*` (T6). Export is best effort: a collector that is down
// or slow never affects a run; failures are logged and the batch is dropped.
import { createHash } from "node:crypto";
import type { PrismaClient, Span } from "../../generated/prisma/client.js";
import type { Logger } from "../../logger.js";
import { attributesOf, usageOf } from "../../domain/json-columns.js";
import { evaluationRecords } from "./otlp-evaluations.js";

export interface SpanExporter {
  /** Called after a span's end was committed. */
  spanEnded(spanId: string): void;
  /** Called after a score was committed: one on a span or a run is exported as an evaluation event. */
  scoreCreated(scoreId: string): void;
  /** Sends what is queued. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

type AttributeValue = { stringValue: string } | { intValue: string } | { boolValue: boolean };
const hex = (id: string, bytes: number) =>
  createHash("sha256")
    .update(id)
    .digest("hex")
    .slice(0, bytes * 2);
const nanos = (date: Date) => `${BigInt(date.getTime()) * 1_000_000n}`;

function attribute(key: string, value: unknown): { key: string; value: AttributeValue } | null {
  if (typeof value === "string") return { key, value: { stringValue: value } };
  if (typeof value === "number" && Number.isInteger(value)) return { key, value: { intValue: String(value) } };
  if (typeof value === "boolean") return { key, value: { boolValue: value } };
  return null;
}

const operationOf: Record<string, string> = { RUN: "invoke_agent", MODEL_CALL: "chat", TOOL_CALL: "execute_tool" };

/** One of our spans as an OTLP span. */
export function toOtlpSpan(span: Span): Record<string, unknown> {
  const attributes = attributesOf(span.attributes);
  const usage = usageOf(span.usage);
  const pairs: [string, unknown][] = [
    ["gen_ai.operation.name", operationOf[span.kind] ?? span.kind.toLowerCase()],
    ["dossier.span.kind", span.kind],
    ["gen_ai.agent.name", attributes["gen_ai.agent.name"]],
    ["gen_ai.request.model", attributes["gen_ai.request.model"]],
    ["gen_ai.response.model", attributes["gen_ai.response.model"]],
    ["gen_ai.tool.name", attributes["gen_ai.tool.name"]],
    ["gen_ai.tool.call.id", attributes["gen_ai.tool.call.id"]],
    ["gen_ai.usage.input_tokens", usage?.input],
    ["gen_ai.usage.output_tokens", usage?.output],
    ["gen_ai.usage.cache_read.input_tokens", usage?.cached],
    ["gen_ai.usage.reasoning.output_tokens", usage?.reasoning],
    // The call's own cost in USD, a decimal string (exact); absent for a call without a price.
    ["dossier.cost.usd", span.cost === null ? undefined : span.cost.toFixed()],
    ["error.type", attributes.error === undefined ? undefined : "dossier_error"],
  ];
  return {
    traceId: hex(span.traceId, 16),
    spanId: hex(span.id, 8),
    ...(span.parentId ? { parentSpanId: hex(span.parentId, 8) } : {}),
    name: span.name,
    kind: span.kind === "MODEL_CALL" || span.kind === "MCP_CALL" ? 3 : 1, // CLIENT : INTERNAL
    startTimeUnixNano: nanos(span.startedAt),
    endTimeUnixNano: nanos(span.endedAt ?? span.startedAt),
    attributes: pairs.map(([key, value]) => attribute(key, value)).filter((a) => a !== null),
    status: span.status === "ERROR" ? { code: 2, message: String(attributes.error ?? "") } : { code: span.status === "OK" ? 1 : 0 },
  };
}

export class OtlpHttpExporter implements SpanExporter {
  private queue: string[] = [];
  private scores: string[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: { prisma: PrismaClient; endpoint: string; logger: Logger; intervalMs?: number; serviceName?: string }) {
    this.timer = setInterval(() => void this.flush(), options.intervalMs ?? 1_000);
    this.timer.unref();
  }

  spanEnded(spanId: string): void {
    this.queue.push(spanId);
  }

  scoreCreated(scoreId: string): void {
    this.scores.push(scoreId);
  }

  async flush(): Promise<void> {
    await this.flushSpans();
    await this.flushScores();
  }

  private async flushScores(): Promise<void> {
    if (this.scores.length === 0) return;
    const ids = this.scores.splice(0, 512);
    try {
      const records = await evaluationRecords(this.options.prisma, ids);
      if (records.length === 0) return;
      const body = {
        resourceLogs: [
          {
            resource: { attributes: [{ key: "service.name", value: { stringValue: this.options.serviceName ?? "dossier" } }] },
            scopeLogs: [{ scope: { name: "dossier.scores" }, logRecords: records }],
          },
        ],
      };
      await this.post("/v1/logs", body);
    } catch (error) {
      this.options.logger.warn("OTLP export failed; the evaluation events were dropped", { scores: ids.length, error: String(error) });
    }
  }

  private async post(path: string, body: unknown): Promise<void> {
    const response = await fetch(`${this.options.endpoint.replace(/\/$/, "")}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(5_000),
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
  }

  private async flushSpans(): Promise<void> {
    if (this.queue.length === 0) return;
    const ids = this.queue.splice(0, 512);
    try {
      const spans = await this.options.prisma.span.findMany({ where: { id: { in: ids } } });
      const body = {
        resourceSpans: [
          {
            resource: { attributes: [{ key: "service.name", value: { stringValue: this.options.serviceName ?? "dossier" } }] },
            scopeSpans: [{ scope: { name: "dossier.runtime" }, spans: spans.map(toOtlpSpan) }],
          },
        ],
      };
      await this.post("/v1/traces", body);
    } catch (error) {
      this.options.logger.warn("OTLP export failed; the spans were dropped", { spans: ids.length, error: String(error) });
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
