// Runs and their admission (W4, W5).
import {
  ConversationBusyError,
  IdempotencyConflictError,
  NotFoundError,
  QueueFullError,
  ValidationError,
  WorkspaceArchivedError,
} from "../../domain/errors.js";
import { largeText } from "../large-text.js";
import { GOAL_STATEMENT_MAX } from "../../domain/workspace/workspace-service.js";
import { RUN_MATERIALS_MAX } from "../../domain/runs/admission-request.js";
import { fromStored } from "../../domain/text/stored-text.js";
import type { Run } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { boundedCount, countFields } from "../counted-connection.js";
import { idOfType, requireIdOfType } from "../global-id.js";
import { unavailableOnTransient } from "../transient-failures.js";
import { paged, LIST_ITEMS } from "../list-connection.js";
import { isMyLiveWorkspace, mine, myLiveWorkspace, ownedBy } from "./owned.js";
import { admittedRunQuery, admittedWorkspace, answeredRun } from "./admitted-run-query.js";
import { ErrorInterface } from "./errors.js";
import { decimalString } from "./money.js";
import { METADATA_RULE, RunStatusEnum, TAGS_RULE } from "./run-filter.js";
import { MaterialRefInput, materialRefsToDomain } from "./publication.js";

const RunLimits = builder.objectRef<Pick<Run, "maxTurns" | "tokenBudget" | "deadlineSeconds" | "maxCost" | "confirmCostAbove">>("RunLimits").implement({
  description: "The limits a run was admitted with.",
  fields: (t) => ({
    maxTurns: t.exposeInt("maxTurns"),
    tokenBudget: t.exposeInt("tokenBudget", { description: "Model-reported tokens the whole run may use." }),
    deadlineSeconds: t.exposeInt("deadlineSeconds", { description: "Counted from admission." }),
    maxCost: t.field({
      type: "Decimal",
      nullable: true,
      description: "USD the run may spend (Run.cost); null: no cap of its own. At the cap the run stops with stopReason BUDGET.",
      resolve: (run) => (run.maxCost === null ? null : decimalString(run.maxCost)),
    }),
    confirmCostAbove: t.field({
      type: "Decimal",
      nullable: true,
      description: "USD past which the run waits (WAITING, a COST_CONFIRMATION decision) for its owner to let it go on; null: it never asks.",
      resolve: (run) => (run.confirmCostAbove === null ? null : decimalString(run.confirmCostAbove)),
    }),
  }),
});

const FrozenGoal = builder.objectRef<{ version: number; statement: string }>("FrozenGoal").implement({
  description: "The workspace goal as it was when the run was admitted; later goal updates do not change it.",
  fields: (t) => ({ version: t.exposeInt("version"), statement: t.exposeString("statement", { extensions: largeText(GOAL_STATEMENT_MAX) }) }),
});

export const RunMaterialRef = builder.prismaObject("RunMaterial", {
  description: "An exact publication version selected for the run at admission.",
  fields: (t) => ({
    position: t.exposeInt("position", {
      description:
        "Its place in `Run.materials`, from 0. An access token is shown only the materials within its reach, numbered among themselves (0, 1, 2…): no gap stands for one it is not shown.",
    }),
    publicationVersion: t.relation("publicationVersion"),
  }),
});

export const RunNode = builder.prismaNode("Run", {
  id: { field: "id" },
  nullable: true,
  findUnique: ownedBy,
  description: "One independent research run, with the inputs frozen at its admission.",
  fields: (t) => ({
    status: t.expose("status", { type: RunStatusEnum }),
    question: t.exposeString("question", { extensions: largeText(GOAL_STATEMENT_MAX) }),
    agent: t.exposeString("agent", { description: "The agent profile the run executes under." }),
    agentProfile: t.relation("agentProfile", {
      nullable: true,
      description:
        "The version of the agent profile frozen at admission: the system prompt, tools and skills the run executes, whatever the configuration says now. Null for a run admitted before profiles were versioned.",
    }),
    limits: t.field({ type: RunLimits, resolve: (run) => run }),
    priority: t.exposeInt("priority", { description: "Orders the run among its principal's own queued runs (AdmitRunInput.priority)." }),
    deadlineAt: t.expose("deadlineAt", { type: "DateTime" }),
    answer: t.string({
      nullable: true,
      extensions: largeText(),
      description:
        "The final reply, exactly as the model gave it — or, for a run stopped NOW (cancelRun) while its model was writing, the text it had streamed (answerComplete false); that text appears once the attempt executing the run has stopped, a moment after cancelRun answered.",
      resolve: (run) => (run.answer === null ? null : fromStored(run.answer)),
    }),
  }),
});

// How the run executes: its times, where it runs, what answered, its log and trace (its attempts: types/run-attempts.ts).
builder.prismaObjectFields(RunNode, (t) => ({
  failureReason: t.exposeString("failureReason", {
    nullable: true,
    description:
      "Why a FAILED run failed: MAX_TURNS, TOKEN_BUDGET, CONTEXT_OVERFLOW, MODEL_ERROR (the model's request failed) or INTERNAL_ERROR (Dossier itself; the logs say more).",
  }),
  createdAt: t.expose("createdAt", { type: "DateTime" }),
  startedAt: t.expose("startedAt", { type: "DateTime", nullable: true }),
  finishedAt: t.expose("finishedAt", { type: "DateTime", nullable: true }),
  conversation: t.relation("conversation"),
  admittedBy: t.relation("owner", { description: "The principal whose rights the run has (fixed at admission)." }),
  model: t.exposeString("modelLabel", {
    nullable: true,
    description: 'What answered, e.g. "openai:gpt-4o-mini"; "scripted:…" marks the deterministic scripted model.',
  }),
  tokensUsed: t.exposeInt("tokensUsed", { description: "Model-reported tokens so far, counted against the token budget." }),
  messages: t.prismaConnection(
    {
      type: "Message",
      description: "This run's entries in the conversation log, in order.",
      cursor: "id",
      ...paged({ defaultSize: 50, maxSize: 200 }),
      resolve: (query, run, _args, ctx) => ctx.prisma.message.findMany({ ...query, where: { runId: run.id }, orderBy: { seq: "asc" } }),
    },
    { name: "RunMessageConnection", fields: countFields<{ id: string }>((run, ctx) => boundedCount(ctx.prisma.message, { runId: run.id })) },
    { name: "RunMessageEdge" },
  ),
  // trace: types/trace-retention.ts (a union: TraceExpiredError once the trace expired).
}));

// What the run works on, as frozen at its admission: the workspace, its goal and the materials.
builder.prismaObjectFields(RunNode, (t) => ({
  workspace: t.prismaField({
    type: "Workspace",
    nullable: true,
    description: "The workspace the run was admitted in, while it exists.",
    resolve: (query, run, _args, ctx) => {
      if (!run.workspaceId) return null;
      // An admission's answer: the workspace as the admission found it, when the selection reads nothing beyond its columns.
      const found = admittedWorkspace(run, query);
      if (found && isMyLiveWorkspace(ctx, found)) return found;
      return ctx.prisma.workspace.findFirst({ ...query, where: { id: run.workspaceId, ...myLiveWorkspace(ctx) } });
    },
  }),
  frozenGoal: t.field({
    type: FrozenGoal,
    nullable: true,
    description: "The goal frozen at admission (null for a run outside any workspace). Kept even if the workspace is deleted.",
    resolve: (run) => (run.goalVersionNo !== null && run.goalStatement !== null ? { version: run.goalVersionNo, statement: run.goalStatement } : null),
  }),
  goalVersion: t.relation("goalVersion", {
    nullable: true,
    description: "The frozen goal version as a node, while the workspace exists.",
  }),
  // A relation, so that a page of runs reads every run's materials in one statement: in its
  // parent's statement when Pothos reads the run, else in one batch for the runs of a request.
  materials: t.relation("materials", {
    extensions: { [LIST_ITEMS]: RUN_MATERIALS_MAX },
    description: `The publication versions selected at admission, in the order given: at most ${RUN_MATERIALS_MAX}, all of them (an access token is shown those readMaterial would show it).`,
    query: { orderBy: { position: "asc" }, take: RUN_MATERIALS_MAX },
  }),
}));

builder.queryField("run", (t) =>
  t.prismaField({
    type: "Run",
    nullable: true,
    description: "One of your runs; null for any other id.",
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, args, ctx) => {
      const id = idOfType(String(args.id), "Run");
      return id ? ctx.prisma.run.findFirst({ ...query, where: { id, ...mine(ctx) } }) : null;
    },
  }),
);

const MultitaskStrategyEnum = builder.enumType("MultitaskStrategy", {
  description: "What a new run does when its conversation already has a queued, running, waiting (WAITING) or paused (PAUSED) run (R19).",
  values: {
    REJECT: { description: "Admit nothing: a ConversationBusyError names the active run. The default." },
    ENQUEUE: {
      description:
        "Admit the run QUEUED; it starts once the conversation's runs before it are terminal, on the log as they left it. A run WAITING for decisions on its tool calls holds the conversation until it has ended.",
    },
    INTERRUPT: {
      description:
        "Cancel the conversation's running, waiting, paused and queued runs (their interrupted calls are repaired, their waiting calls rejected); the new run starts once the running one has stopped. It cancels as cancelRun does, so it needs CANCEL besides ADMIT: an API key's CANCEL scope, an access token's CANCEL on every run it would cancel; otherwise a ForbiddenError, and nothing changes.",
    },
  } as const,
});

builder.objectType(ConversationBusyError, {
  name: "ConversationBusyError",
  description: "The conversation has a queued, running or waiting run and the admission said REJECT; nothing was written.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    activeRun: t.field({ type: RunNode, description: "The running or waiting run, or the first queued one.", resolve: (error) => error.activeRun }),
  }),
});

export const RunLimitsInput = builder.inputType("RunLimitsInput", {
  description: "Omitted limits take their defaults: 20 turns, 200,000 tokens, 1,800 seconds, and no cost caps.",
  fields: (t) => ({
    maxTurns: t.int(),
    tokenBudget: t.int(),
    deadlineSeconds: t.int(),
    maxCost: t.field({
      type: "Decimal",
      description:
        'USD the run may spend, such as "2.50" (more than 0, at most 10 decimal places): checked before every model request with the cost so far plus a bound on that request; at the cap the run stops with stopReason BUDGET, its text so far kept.',
    }),
    confirmCostAbove: t.field({
      type: "Decimal",
      description:
        "A soft threshold in USD: before a model request that could cross it the run goes WAITING on a COST_CONFIRMATION decision; approving lets it go on, rejecting ends it with stopReason BUDGET.",
    }),
  }),
});

const AdmitRunInput = builder.inputType("AdmitRunInput", {
  fields: (t) => ({
    workspaceId: t.id({ description: "Admit the run in this workspace: its current goal version is frozen on the run." }),
    conversationId: t.id({
      description:
        "Continue this conversation; without it a new conversation is started. The run is shown the conversation's earlier messages, so this needs READ on it as well as ADMIT (an access token's grant, an API key's scope): ForbiddenError otherwise.",
    }),
    agent: t.string({ description: "The agent profile; default `researcher` (with run caps that leave it out, the first profile they allow: RunCapsInput)." }),
    question: t.string({ required: true }),
    materials: t.field({
      type: [MaterialRefInput],
      description:
        "Exact publication versions to give the run. With an access token, only versions of the history of a workspace it may READ (what readMaterial reads for it); any other is a NotFoundError, as for a version that does not exist, and the run's read_material reads no further either.",
    }),
    limits: t.field({ type: RunLimitsInput }),
    multitask: t.field({
      type: MultitaskStrategyEnum,
      description: "When the conversation has a queued, running or waiting run: REJECT (default), ENQUEUE or INTERRUPT. A replay ignores it.",
    }),
    idempotencyKey: t.string({
      description: "Retrying with the same key and request returns the same run (replayed); kept at least 24 hours.",
    }),
    priority: t.int({
      description:
        "Orders this run among its principal's own queued runs: higher first, then oldest; default 0, from -1000 to 1000. Workers interleave principals before it: the principal with the fewest running runs goes first.",
    }),
    tags: t.stringList({
      description: `Labels to find the run by (runs(filter: {tagsAll, tagsAny})): ${TAGS_RULE}. A tag given twice is kept once. Compared as a set for idempotency: a retry with other tags is an IdempotencyConflictError.`,
    }),
    metadata: t.field({
      type: "JSON",
      description: `Your own ids for the run (runs(filter: {metadata})): ${METADATA_RULE}. Part of the request an idempotency key compares.`,
    }),
  }),
});

const AdmitRunSuccess = builder.objectRef<{ run: Run; replayed: boolean }>("AdmitRunSuccess").implement({
  fields: (t) => ({
    run: t.field({ type: RunNode, resolve: (result) => result.run }),
    replayed: t.exposeBoolean("replayed", { description: "True when an earlier admission with the same key is returned." }),
  }),
});

/**
 * What a client is told when the database failed an admission for a moment. The database usually
 * cancelled the statement, so nothing was admitted; only when the connection was lost with it in
 * flight may it have committed: the same key makes the retry safe either way.
 */
const ADMISSION_UNAVAILABLE =
  "The database did not complete the admission in time. Try again with the same idempotencyKey: the run is admitted exactly once (replayed: true if this admission did commit after all).";
const ADMISSION_UNAVAILABLE_UNKEYED =
  "The database did not complete the admission in time; it may still have admitted the run. Without an idempotencyKey a retry can admit it twice: send one to retry safely.";

builder.mutationField("admitRun", (t) =>
  t.field({
    type: AdmitRunSuccess,
    description:
      "Admits a new, independent run with frozen inputs; a worker executes it. A QueueFullError says you already have as many runs QUEUED as one principal may. A ServiceUnavailableError says the database failed the admission for a moment: try again after its retryAfterSeconds with the same idempotencyKey.",
    args: { input: t.arg({ type: AdmitRunInput, required: true }) },
    errors: {
      types: [IdempotencyConflictError, WorkspaceArchivedError, ConversationBusyError, QueueFullError, NotFoundError, ValidationError],
      directResult: true,
      union: { name: "AdmitRunPayload" },
    },
    resolve: async (_root, { input }, ctx, info) => {
      const planned = await admittedRunQuery(ctx, info);
      // The admission's own statements answer in the idempotency key's words; once it committed, a
      // failed read of the answer is not "try again" (a retry without a key would admit the run
      // twice): every payload's own wrapper says the change was made (unavailable-payloads.ts).
      const admitted = await unavailableOnTransient(ctx.logger, input.idempotencyKey ? ADMISSION_UNAVAILABLE : ADMISSION_UNAVAILABLE_UNKEYED, () =>
        ctx.services.admissions.admitRun(
          ctx.actor,
          {
            ...input,
            workspaceId: input.workspaceId ? requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId") : null,
            conversationId: input.conversationId ? requireIdOfType(String(input.conversationId), "Conversation", "conversationId") : null,
            materials: input.materials ? materialRefsToDomain(input.materials, "materials") : null,
            // A JSON value: the admission checks it is a flat object of strings.
            metadata: input.metadata as Record<string, unknown> | null | undefined,
          },
          planned.relations,
        ),
      );
      return { ...admitted, run: await answeredRun(ctx, planned, admitted.run) };
    },
  }),
);
