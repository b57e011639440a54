// Trace retention (README "Trace retention"): policies, pins, when a trace expires, and what
// reading an expired one gives — Run.trace answers TraceExpiredError, with the spans' skeleton as
// its summary where the policy kept it (KEEP_SUMMARY).
import { LIST_ITEMS } from "../list-connection.js";
import { ForbiddenError, NotFoundError, TraceExpiredError, ValidationError } from "../../domain/errors.js";
import { PIN_CONDITIONS } from "../../domain/trace/retention/expiry.js";
import type { TracePinView } from "../../domain/trace/retention/pins.js";
import type { RetentionPolicy, Trace } from "../../generated/prisma/client.js";
import { RetentionMode } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { encodeGlobalId, requireIdOfType } from "../global-id.js";
import { ErrorInterface } from "./errors.js";
import { RunNode } from "./run.js";
import { TraceNode } from "./trace.js";

export const RetentionModeEnum = builder.enumType(RetentionMode, {
  name: "RetentionMode",
  description:
    "What an expired trace keeps. DELETE: nothing of it — its spans, events, payloads and replay log are removed. KEEP_SUMMARY: its spans' skeleton — kind, name, start and end, status and model usage — while events, payloads, span attributes and the replay log are removed. Either way the run, its answer, usage, its log entries, publications and the ledger are never touched.",
});

const TracePinKindEnum = builder.enumType("TracePinKind", {
  values: Object.keys(PIN_CONDITIONS) as (keyof typeof PIN_CONDITIONS)[],
  description:
    "Why a trace does not expire. EXPLICIT: pinTrace. PUBLICATION: a publication version was published from the run (its provenance; the versions checkpoint sections rest on are publication versions). CHECKPOINT: a checkpoint revision accepted the run's proposal. APPROVAL: a person decided one of the run's tool calls. SCORE: a person scored (source HUMAN) the run or one of its spans.",
});

const TracePinRef = builder.objectRef<TracePinView>("TracePin").implement({
  description: "One reason a trace is kept: while it has any, it does not expire.",
  fields: (t) => ({
    kind: t.field({ type: TracePinKindEnum, resolve: (pin) => pin.kind }),
    reason: t.exposeString("reason", { description: "In words: pinTrace's reason, or what refers to the run." }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the pin or the reference was made." }),
  }),
});

builder.prismaObjectFields("Trace", (t) => ({
  expiresAt: t.field({
    type: "DateTime",
    nullable: true,
    description:
      "When the trace expires if nothing changes: its end (or, if later, when its explicit pin was last removed) plus its policy's days. Null while it runs, while anything pins it (pins), when its policy keeps it forever, and once it expired.",
    // A trace read running has no expiry, though its run may have ended by the time its policy is
    // read. (Trace rows carry every column: a field-level select would read the trace again, apart.)
    resolve: async (trace, _args, ctx) => (trace.endedAt ? ((await ctx.services.retention.retention(trace.id))?.expiresAt ?? null) : null),
  }),
  pins: t.field({
    type: [TracePinRef],
    extensions: { [LIST_ITEMS]: 100 },
    description: "Why the trace stays, oldest first (at most 100): an explicit pin, and everything that refers to the run or a span of it as evidence.",
    resolve: (trace, _args, ctx) => ctx.services.retention.pins(trace.id),
  }),
  expiredAt: t.expose("expiredAt", { type: "DateTime", nullable: true, description: "When the trace expired; null while it is kept." }),
  expiredMode: t.expose("expiredMode", { type: RetentionModeEnum, nullable: true, description: "What expiry kept of it; null while it is kept." }),
}));

builder.objectType(TraceExpiredError, {
  name: "TraceExpiredError",
  description:
    "The run's trace expired under its retention policy: its events, payloads and replay log are gone (and with DELETE its spans). summary still answers the spans' skeleton under KEEP_SUMMARY.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    runId: t.id({ resolve: (error) => encodeGlobalId("Run", error.runId) }),
    expiredAt: t.expose("expiredAt", { type: "DateTime" }),
    mode: t.field({ type: RetentionModeEnum, resolve: (error) => error.mode }),
    summary: t.prismaField({
      type: "Trace",
      nullable: true,
      description: "KEEP_SUMMARY: the trace as kept — its spans with kind, name, times, status and usage, no events, attributes {}. Null for DELETE.",
      resolve: (query, error, _args, ctx) => (error.mode === "KEEP_SUMMARY" ? ctx.prisma.trace.findUnique({ ...query, where: { runId: error.runId } }) : null),
    }),
  }),
});

builder.prismaObjectFields(RunNode, (t) => ({
  trace: t.field({
    type: TraceNode,
    nullable: true,
    description:
      "The run's Span + Event tree; null until the run starts. TraceExpiredError once it expired under its retention policy (README: Trace retention).",
    errors: { types: [TraceExpiredError], directResult: true, union: { name: "RunTraceResult" } },
    // Read in the run's own statement (a lateral join): the trace row shows the moment the run's
    // status does, so a run read RUNNING never comes with a trace that has ended (a settle ends
    // both in one transaction). The expiry columns are read whatever the selection.
    select: (_args, _ctx, nestedSelection) => ({ trace: nestedSelection({ select: { expiredAt: true, expiredMode: true } }, [], "Trace") }),
    resolve: (run) => {
      // The row holds the columns the selection asked for (every Trace field's), as a read with `query` would.
      const trace = run.trace as Trace | null;
      if (trace?.expiredAt) throw new TraceExpiredError(run.id, trace.expiredAt, trace.expiredMode ?? "DELETE");
      return trace;
    },
  }),
}));

const RetentionPolicyRef = builder.objectRef<RetentionPolicy>("RetentionPolicy").implement({
  description:
    "How long the traces of runs are kept: a workspace's (for the runs admitted in it) or a principal's default (its runs in workspaces without a policy, and outside any). Without either, the operator's TRACE_RETENTION_DAYS applies; without that, traces are kept forever.",
  fields: (t) => ({
    workspaceId: t.id({
      nullable: true,
      description: "The workspace; null for the principal's default.",
      resolve: (policy) => (policy.workspaceId ? encodeGlobalId("Workspace", policy.workspaceId) : null),
    }),
    days: t.exposeInt("days", { nullable: true, description: "Days a trace is kept after its end; null: forever." }),
    mode: t.expose("mode", { type: RetentionModeEnum }),
    updatedAt: t.expose("updatedAt", { type: "DateTime" }),
  }),
});

const SetRetentionPolicyInput = builder.inputType("SetRetentionPolicyInput", {
  fields: (t) => ({
    workspaceId: t.id({ description: "A workspace you own; omit it to set your default." }),
    days: t.int({ description: "Days a trace is kept after its run's end, 1 to 36500; null keeps traces forever (overriding any default)." }),
    mode: t.field({ type: RetentionModeEnum, description: "What an expired trace keeps; DELETE when omitted." }),
  }),
});

builder.mutationField("setRetentionPolicy", (t) =>
  t.field({
    type: builder.objectRef<{ policy: RetentionPolicy }>("SetRetentionPolicySuccess").implement({
      fields: (f) => ({ policy: f.field({ type: RetentionPolicyRef, resolve: (result) => result.policy }) }),
    }),
    description:
      "Sets how long the traces of a workspace's runs are kept (its owner), or with no workspaceId your default for your other runs. It applies to every trace not yet expired, those that ended before it included, from the next sweep on: a shorter policy may expire old traces at once. Pinned traces never expire.",
    args: { input: t.arg({ type: SetRetentionPolicyInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError, ForbiddenError], directResult: true, union: { name: "SetRetentionPolicyPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      policy: await ctx.services.retention.setPolicy(ctx.actor, {
        workspaceId: input.workspaceId == null ? null : requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId"),
        days: input.days ?? null,
        mode: input.mode ?? null,
      }),
    }),
  }),
);

const PinTraceSuccess = builder.objectRef<{ traceId: string }>("PinTraceSuccess").implement({
  fields: (t) => ({
    trace: t.prismaField({
      type: "Trace",
      resolve: (query, result, _args, ctx) => ctx.prisma.trace.findUniqueOrThrow({ ...query, where: { id: result.traceId } }),
    }),
  }),
});

builder.mutationField("pinTrace", (t) =>
  t.field({
    type: PinTraceSuccess,
    description:
      "Pins the run's trace: it does not expire while pinned (Trace.pins lists it as EXPLICIT). Pinning a pinned trace replaces the reason. NotFound for a run without a trace yet; TraceExpiredError once it expired.",
    args: {
      input: t.arg({
        type: builder.inputType("PinTraceInput", { fields: (f) => ({ runId: f.id({ required: true }), reason: f.string({ required: true }) }) }),
        required: true,
      }),
    },
    errors: { types: [NotFoundError, ValidationError, TraceExpiredError, ForbiddenError], directResult: true, union: { name: "PinTracePayload" } },
    resolve: async (_root, { input }, ctx) => ({
      traceId: await ctx.services.retention.pin(ctx.actor, requireIdOfType(String(input.runId), "Run", "runId"), { reason: input.reason }),
    }),
  }),
);

builder.mutationField("unpinTrace", (t) =>
  t.field({
    type: PinTraceSuccess,
    description:
      "Removes the run's explicit pin. Its retention clock restarts now: it expires its policy's days from now at the earliest (unless something else pins it). Unpinning a trace without an explicit pin changes nothing.",
    args: {
      input: t.arg({ type: builder.inputType("UnpinTraceInput", { fields: (f) => ({ runId: f.id({ required: true }) }) }), required: true }),
    },
    errors: { types: [NotFoundError, ValidationError, TraceExpiredError, ForbiddenError], directResult: true, union: { name: "UnpinTracePayload" } },
    resolve: async (_root, { input }, ctx) => ({
      traceId: await ctx.services.retention.unpin(ctx.actor, requireIdOfType(String(input.runId), "Run", "runId")),
    }),
  }),
);
