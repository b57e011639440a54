// Scores as OpenTelemetry GenAI evaluation events (issue 39): a score on a span, or on a run (its
// root RUN span), becomes a `gen_ai.evaluation.result` event parented to that span, as the GenAI
// semantic conventions ask — a log record (OTLP /v1/logs) carrying the span's trace and span ids,
// with `gen_ai.evaluation.name` (the config's name), `gen_ai.evaluation.score.value`,
// `gen_ai.evaluation.score.label` and `gen_ai.evaluation.explanation` (the score's comment).
// Scores on publication or checkpoint versions have no span to belong to and are not exported.
import { createHash } from "node:crypto";
import type { PrismaClient } from "../../generated/prisma/client.js";

export const EVALUATION_EVENT = "gen_ai.evaluation.result";

type Value = { stringValue: string } | { doubleValue: number };
const hex = (id: string, bytes: number) =>
  createHash("sha256")
    .update(id)
    .digest("hex")
    .slice(0, bytes * 2);
const nanos = (date: Date) => `${BigInt(date.getTime()) * 1_000_000n}`;

/** The log records of these scores, each parented to the span it judges; scores without one are left out. */
export async function evaluationRecords(prisma: PrismaClient, scoreIds: string[]): Promise<Record<string, unknown>[]> {
  const scores = await prisma.score.findMany({
    where: { id: { in: scoreIds }, targetKind: { in: ["SPAN", "RUN"] } },
    include: { config: { select: { name: true } } },
  });
  const spanIds = scores.filter((s) => s.targetKind === "SPAN").map((s) => s.targetId);
  const runIds = scores.filter((s) => s.targetKind === "RUN").map((s) => s.targetId);
  const spans = await prisma.span.findMany({
    where: { OR: [{ id: { in: spanIds } }, { kind: "RUN", parentId: null, trace: { runId: { in: runIds } } }] },
    select: { id: true, traceId: true, trace: { select: { runId: true } } },
  });
  const spanOf = (score: (typeof scores)[number]) =>
    score.targetKind === "SPAN" ? spans.find((s) => s.id === score.targetId) : spans.find((s) => s.trace.runId === score.targetId);
  return scores.flatMap((score) => {
    const span = spanOf(score);
    if (!span) return [];
    const pairs: [string, Value | null][] = [
      ["gen_ai.evaluation.name", { stringValue: score.config.name }],
      ["gen_ai.evaluation.score.value", score.value === null ? null : { doubleValue: score.value }],
      ["gen_ai.evaluation.score.label", score.label === null ? null : { stringValue: score.label }],
      ["gen_ai.evaluation.explanation", score.comment === null ? null : { stringValue: score.comment }],
      ["dossier.score.source", { stringValue: score.source }],
    ];
    return [
      {
        timeUnixNano: nanos(score.createdAt),
        observedTimeUnixNano: nanos(score.createdAt),
        eventName: EVALUATION_EVENT,
        traceId: hex(span.traceId, 16),
        spanId: hex(span.id, 8),
        attributes: pairs.filter(([, value]) => value !== null).map(([key, value]) => ({ key, value })),
      },
    ];
  });
}
