// A run's trace: the Span + Event tree (T1, T4). Payloads are never inlined by default: an
// event shows a preview and a size, and `payload` only when asked for.
import { fromStored, fromStoredJson } from "../../domain/text/stored-text.js";
import { Decimal } from "../../domain/costs/pricing.js";
import { usageOf } from "../../domain/json-columns.js";
import { MAX_TOKEN_COUNT } from "../../domain/runs/vocabulary.js";
import type { Prisma, Span, SpanEvent } from "../../generated/prisma/client.js";
import { SpanEventKind, SpanKind, SpanStatus } from "../../generated/prisma/enums.js";
import { type LogLookup, readLogMessages } from "../../domain/trace/recorded-request.js";
import { firstEventsOfSpans, noUsage, requestOf, type SubtreeSums, subtreeSums, traceUsages, type Usage } from "../../trace/read/trace-reads.js";
import { SEQ_TYPE_NOTE } from "../sequence.js";
import { builder } from "../builder.js";
import { largeText } from "../large-text.js";
import type { GraphQLContext } from "../context.js";
import { encodeGlobalId } from "../global-id.js";
import { connectionOf, describePage, type KeysetList, listConnection, pageOf, readConnection, TRACE_PAGE, TRACE_RECORDS } from "../list-connection.js";
import { boundedCount } from "../counted-connection.js";
import { loadBatched } from "../request-batch.js";

const SPANS: KeysetList = {
  typename: "Span",
  order: [
    ["startedAt", "asc"],
    ["id", "asc"],
  ],
  ...TRACE_PAGE,
};
const EVENTS: KeysetList = {
  typename: "SpanEvent",
  order: [
    ["seq", "asc"],
    ["id", "asc"],
  ],
  ...TRACE_PAGE,
};

const SpanKindEnum = builder.enumType(SpanKind, { name: "SpanKind" });
const SpanStatusEnum = builder.enumType(SpanStatus, { name: "SpanStatus" });
const SpanEventKindEnum = builder.enumType(SpanEventKind, {
  name: "SpanEventKind",
  values: {
    APPROVAL_REQUESTED: {
      description:
        "On a TOOL_CALL span: the call waits for a person's decision before it executes (Run.pendingApprovals). Payload: JSON with approvalId, toolCallId, toolName, expiresAt.",
    },
    APPROVAL_DECIDED: {
      description:
        "On a TOOL_CALL span: the call that waited was decided — by its run's owner (decideToolCall), by expiry, or because the run was cancelled, reached its deadline or ended — recorded in the same transaction as the decision. " +
        "Payload: JSON with approvalId, toolCallId, toolName, decision (APPROVE | REJECT | EDIT), decidedBy (the principal's id; null when nobody decided), reason, decidedAt; with EDIT also originalArguments (the model's) and editedArguments (what runs), JSON text each.",
    },
    STEERED: {
      description:
        "On a TURN span, before its model call: a person's steering input (steerRun) entered the log right before this turn's model request, in the same transaction that marked it DELIVERED. Payload: the text (the USER log entry's content).",
    },
    STOP_REQUESTED: {
      description:
        "A stop was requested (cancelRun). On the RUN span when it is recorded — payload JSON with mode (CancelMode), requestedBy (the principal's id), requestedAt; none for a run never claimed — and on the ATTEMPT span that takes an AFTER_TURN or CONCLUDE stop: JSON with mode and taken (what the attempt does).",
    },
    TRUNCATED: {
      description:
        "On the RUN span, once: the trace reached its bound (MAX_TRACE_RECORDS spans and events; Trace.truncated). The run went on; from then on its trace keeps only the ends of the spans it had kept and model usage (a span started later is not kept, and its usage is added to the kept span above it). Payload: JSON with maxRecords.",
    },
  },
});

/** A count as GraphQL's Int holds it: a sum of usage past MAX_TOKEN_COUNT (calls that each reported billions) is given as it. */
const tokenCount = (key: keyof Usage) => (usage: Usage) => Math.min(usage[key], MAX_TOKEN_COUNT);

const TokenUsageRef = builder.objectRef<Usage>("TokenUsage").implement({
  description: "Model-reported tokens. A count (or a sum of counts) past 2,147,483,647 is given as 2,147,483,647.",
  fields: (t) => ({
    input: t.int({ resolve: tokenCount("input") }),
    output: t.int({ resolve: tokenCount("output") }),
    cached: t.int({ resolve: tokenCount("cached") }),
    reasoning: t.int({ resolve: tokenCount("reasoning") }),
  }),
});

export const SpanEventObject = builder.prismaNode("SpanEvent", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id, ctx) => ({ id, span: { trace: { run: { ownerId: ctx.actor.principalId } } } }),
  // The payload itself is loaded only when the opt-in field asks for it.
  select: { id: true, seq: true, kind: true, at: true, payloadSize: true, preview: true },
  fields: (t) => ({
    seq: t.string({ description: `The trace's sequence number of this event. ${SEQ_TYPE_NOTE}`, resolve: (event) => String(event.seq) }),
    kind: t.expose("kind", { type: SpanEventKindEnum }),
    at: t.expose("at", { type: "DateTime" }),
    size: t.exposeInt("payloadSize", { description: "Bytes of the whole payload." }),
    preview: t.string({ description: "The first 500 characters of the payload.", resolve: (event) => fromStored(event.preview) }),
    truncated: t.boolean({
      description: "Whether the payload is longer than the preview.",
      resolve: (event) => event.payloadSize > Buffer.byteLength(event.preview, "utf8"),
    }),
    payload: t.string({
      extensions: largeText(),
      description:
        "The whole payload (opt-in: it can be large), exactly as recorded, NUL characters included. A tool's result and a final reply are read from the conversation log, where they are stored.",
      resolve: async (event, _args, ctx) => {
        const stored = await ctx.prisma.spanEvent.findUniqueOrThrow({
          where: { id: event.id },
          select: { payload: true, message: { select: { content: true } } },
        });
        return fromStored(stored.message ? stored.message.content : stored.payload);
      },
    }),
  }),
});

/**
 * The first `take` events of a span. A trace is read with every span's first page of events: the
 * spans of one request are answered together (trace-reads.ts, firstEventsOfSpans). The columns
 * are those the SpanEvent type selects (its payload is read by its own field, only when asked
 * for); the order is EVENTS'.
 */
async function firstEventsOf(ctx: GraphQLContext, spanId: string, take: number): Promise<SpanEvent[]> {
  const events = await loadBatched(ctx, `span-events:${take}`, spanId, (spanIds) => firstEventsOfSpans(ctx.prisma, spanIds, take));
  return (events ?? []) as SpanEvent[];
}

/**
 * The usage and cost of a span and every span below it: the spans of one request that ask are
 * answered together, in one statement that reads only the spans under them (trace-reads.ts).
 */
export async function subtreeOf(ctx: GraphQLContext, spanId: string): Promise<SubtreeSums> {
  // A span removed since it was listed (trace retention) sums to nothing.
  const sums = await loadBatched(ctx, "span-subtree-sums", spanId, (spanIds) => subtreeSums(ctx.prisma, spanIds));
  return sums ?? { usage: noUsage(), cost: new Decimal(0), unpriced: false };
}

export const SpanObject = builder.prismaNode("Span", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id, ctx) => ({ id, trace: { run: { ownerId: ctx.actor.principalId } } }),
  fields: (t) => ({
    parentId: t.id({
      nullable: true,
      description: "The parent span's id (null for the run's root span).",
      resolve: (span) => (span.parentId ? encodeGlobalId("Span", span.parentId) : null),
    }),
    kind: t.expose("kind", { type: SpanKindEnum }),
    name: t.string({ resolve: (span) => fromStored(span.name) }),
    status: t.expose("status", { type: SpanStatusEnum, description: "RUNNING until the span ends." }),
    startedAt: t.expose("startedAt", { type: "DateTime" }),
    endedAt: t.expose("endedAt", { type: "DateTime", nullable: true }),
    attributes: t.string({
      extensions: largeText(),
      description:
        'The span\'s attributes as JSON. A model call\'s attributes hold its budget breakdown and its request as recorded: messages the conversation log holds as they were sent are references to their log entries ({"logMessage": id}), and a user message joined from several (a run\'s context and its question) lists its parts ({"role": "user", "parts": [{"logMessage": id} or {"text": …}]}, its content their concatenation); `request` reads them back.',
      resolve: (span) => JSON.stringify(fromStoredJson(span.attributes)),
    }),
    request: t.string({
      nullable: true,
      extensions: largeText(),
      description:
        "A model call's request: the exact messages sent to the model, as JSON, with what the span records as references read back from the conversation log (opt-in: it can be large). Null for other spans.",
      resolve: (span, _args, ctx) => {
        // The log entries of every span's request in this GraphQL request: one query.
        const read = readLogMessages(ctx.prisma);
        const lookup: LogLookup = async (ids) => {
          const found = await Promise.all(ids.map((id) => loadBatched(ctx, "log-message", id, read)));
          return new Map(found.flatMap((row) => (row ? [[row.id, row] as const] : [])));
        };
        return requestOf(span.attributes, lookup);
      },
    }),
    usage: t.field({
      type: TokenUsageRef,
      nullable: true,
      description: "This span's own model usage (model calls only), never including its children.",
      resolve: (span) => usageOf(span.usage),
    }),
    cumulativeUsage: t.field({
      type: TokenUsageRef,
      description: "The usage of this span and every span below it, each counted once.",
      resolve: async (span, _args, ctx) => (await subtreeOf(ctx, span.id)).usage,
    }),
    events: listConnection<Span>(t, {
      type: "SpanEvent",
      name: "SpanEventConnection",
      list: EVENTS,
      extensions: { [TRACE_RECORDS]: true },
      description: describePage("The span's events in the order they were recorded (by `seq`).", EVENTS),
      resolve: async (query, span, args, ctx) => {
        const page = await pageOf<Prisma.SpanEventWhereInput>(EVENTS, args, (id, select) =>
          ctx.prisma.spanEvent.findFirst({ where: { id, spanId: span.id }, select }),
        );
        const count = () => boundedCount(ctx.prisma.spanEvent, { spanId: span.id });
        const cursorOf = (event: SpanEvent) => encodeGlobalId("SpanEvent", event.id);
        // A first page (one more row, to know whether there is more) is read with the other spans' first pages.
        if (args.after == null && args.before == null && !page.backwards) {
          return connectionOf(await firstEventsOf(ctx, span.id, page.take + 1), page, args, cursorOf, count);
        }
        const rows = await ctx.prisma.spanEvent.findMany({ ...query, where: { spanId: span.id, ...page.where }, orderBy: page.orderBy, take: page.take + 1 });
        return connectionOf(rows as SpanEvent[], page, args, cursorOf, count);
      },
    }),
  }),
});

export const TraceNode = builder.prismaNode("Trace", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id, ctx) => ({ id, run: { ownerId: ctx.actor.principalId } }),
  fields: (t) => ({
    lastSeq: t.string({
      description: `The sequence number of the latest recorded change: pass it as afterSeq to traceUpdates or runOutput. ${SEQ_TYPE_NOTE}`,
      resolve: (trace) => String(trace.lastSeq),
    }),
    endedAt: t.expose("endedAt", {
      type: "DateTime",
      nullable: true,
      description:
        "When the run settled (its Run.finishedAt): the trace ends once, with the run. Null while the run is QUEUED, RUNNING, WAITING or PAUSED — a run and its trace read by a query (run, runs, node) show the same moment, so a run read RUNNING there never comes with an ended trace; a mutation's payload may read its run's trace a moment after the run.",
    }),
    truncated: t.boolean({
      description:
        "Whether the trace reached its bound (MAX_TRACE_RECORDS spans and events, 50,000 by default) and so holds only part of the run: its TRUNCATED event on the RUN span says where. The run itself is unaffected, and usage stays complete.",
      resolve: (trace) => trace.truncatedAt !== null,
    }),
    truncatedAt: t.expose("truncatedAt", {
      type: "DateTime",
      nullable: true,
      description: "When the trace reached its bound (its TRUNCATED event); null while it holds the whole run.",
    }),
    spans: listConnection<{ id: string }>(t, {
      type: "Span",
      name: "SpanConnection",
      list: SPANS,
      extensions: { [TRACE_RECORDS]: true },
      description: describePage("The trace's spans in start order.", SPANS),
      resolve: (query, trace, args, ctx) => readConnection<Span>(ctx.prisma.span, SPANS, args, { scope: { traceId: trace.id }, query }),
    }),
    usage: t.field({
      type: TokenUsageRef,
      description: "The whole run's model usage: the sum of the model spans' own usage.",
      resolve: async (trace, _args, ctx) => (await loadBatched(ctx, "trace-usage", trace.id, (traceIds) => traceUsages(ctx.prisma, traceIds))) ?? noUsage(),
    }),
  }),
});
