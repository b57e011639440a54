// What runs cost (issue 40): model prices (setModelPrice, modelPrices) and cost on spans, runs,
// traces, workspaces and the principal. A model call is priced when its span ends, from its own
// usage (domain/costs); a call whose model had no price says so (costUnpriced) instead of counting zero.
import { LIST_ITEMS } from "../list-connection.js";
import { ValidationError } from "../../domain/errors.js";
import type { ModelPrice } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { decimalString, MoneyRef, usd } from "./money.js";
import { PrincipalNode } from "./principal.js";
import { RunNode } from "./run.js";
import { SpanObject, subtreeOf } from "./trace.js";
import { WorkspaceNode } from "./workspace.js";

const optional = (value: { toFixed(): string } | null) => (value === null ? null : decimalString(value));

const ModelPriceObject = builder.objectRef<ModelPrice>("ModelPrice").implement({
  description:
    "A model's price per million tokens (USD) from a time on. A call is priced with the entry effective when it ended: your own entry for the model if one is effective, else the operator's.",
  fields: (t) => ({
    model: t.exposeString("model", { description: 'The model name a call requests (e.g. "gpt-4o-mini"), exactly.' }),
    effectiveFrom: t.expose("effectiveFrom", { type: "DateTime" }),
    operator: t.boolean({
      description: "The operator's entry (MODEL_PRICES_FILE, npm run prices:set); false: your own (setModelPrice).",
      resolve: (price) => price.principalId === null,
    }),
    inputPerMillion: t.field({ type: "Decimal", resolve: (price) => decimalString(price.inputPerMillion) }),
    cachedInputPerMillion: t.field({
      type: "Decimal",
      nullable: true,
      description: "Cached input tokens (part of the input tokens); null: the input price.",
      resolve: (price) => optional(price.cachedInputPerMillion),
    }),
    cacheWritePerMillion: t.field({
      type: "Decimal",
      nullable: true,
      description: "Input tokens written to the provider's cache (part of the input tokens); null: the input price.",
      resolve: (price) => optional(price.cacheWritePerMillion),
    }),
    outputPerMillion: t.field({ type: "Decimal", resolve: (price) => decimalString(price.outputPerMillion) }),
    reasoningPerMillion: t.field({
      type: "Decimal",
      nullable: true,
      description: "Reasoning tokens (part of the output tokens); null: the output price.",
      resolve: (price) => optional(price.reasoningPerMillion),
    }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
  }),
});

const SetModelPriceInput = builder.inputType("SetModelPriceInput", {
  fields: (t) => ({
    model: t.string({ required: true, description: "The model name your runs request, exactly (at most 200 characters)." }),
    effectiveFrom: t.field({ type: "DateTime", description: "From when the entry prices calls; default now." }),
    inputPerMillion: t.field({ type: "Decimal", required: true, description: "USD per million input tokens." }),
    cachedInputPerMillion: t.field({ type: "Decimal", description: "USD per million cached input tokens; default the input price." }),
    cacheWritePerMillion: t.field({ type: "Decimal", description: "USD per million input tokens written to the cache; default the input price." }),
    outputPerMillion: t.field({ type: "Decimal", required: true, description: "USD per million output tokens." }),
    reasoningPerMillion: t.field({ type: "Decimal", description: "USD per million reasoning tokens; default the output price." }),
  }),
});

const SetModelPriceSuccess = builder.objectRef<{ modelPrice: ModelPrice }>("SetModelPriceSuccess").implement({
  fields: (t) => ({ modelPrice: t.field({ type: ModelPriceObject, resolve: (result) => result.modelPrice }) }),
});

builder.mutationField("setModelPrice", (t) =>
  t.field({
    type: SetModelPriceSuccess,
    description:
      "Sets your own price for a model (your own model endpoint): it prices your runs' calls to that model that end from `effectiveFrom` on, before the operator's entry. Setting the same model and time again replaces the entry. Prices are non-negative decimals with at most 10 digits before the point and 10 after it (e.g. \"2.50\"): anything else is a ValidationError.",
    args: { input: t.arg({ type: SetModelPriceInput, required: true }) },
    errors: { types: [ValidationError], directResult: true, union: { name: "SetModelPricePayload" } },
    resolve: async (_root, { input }, ctx) => ({ modelPrice: await ctx.services.costs.setModelPrice(ctx.actor, input) }),
  }),
);

builder.queryField("modelPrices", (t) =>
  t.field({
    type: [ModelPriceObject],
    extensions: { [LIST_ITEMS]: 1_000 },
    description: "Your own price entries and the operator's (at most 1,000), by model, your own first, the latest first.",
    resolve: (_root, _args, ctx) => ctx.services.costs.modelPrices(ctx.actor),
  }),
);

builder.prismaObjectFields(SpanObject, (t) => ({
  cost: t.field({
    type: MoneyRef,
    nullable: true,
    description:
      "This model call's own cost, priced when it ended from its own usage; null for other spans, a call still running, or one whose model had no price (costUnpriced).",
    resolve: (span) => (span.cost === null ? null : usd(span.cost)),
  }),
  costUnpriced: t.exposeBoolean("costUnpriced", { description: "This model call's model had no price when it ended: its cost is unknown, not zero." }),
  cumulativeCost: t.field({
    type: MoneyRef,
    description: "The cost of this span and every span below it, each counted once. Calls without a price count nothing (see their costUnpriced).",
    resolve: async (span, _args, ctx) => usd((await subtreeOf(ctx, span.id)).cost),
  }),
}));

builder.prismaObjectFields(RunNode, (t) => ({
  cost: t.field({
    type: MoneyRef,
    description: "What the run cost so far: exactly the sum of its model calls' own cost (Span.cost), each added when the call ended.",
    resolve: (run) => usd(run.cost),
  }),
  costUnpriced: t.exposeBoolean("costUnpriced", { description: "A model call of the run had no price: `cost` leaves it out." }),
}));

builder.prismaObjectFields("Trace", (t) => ({
  cost: t.field({
    type: MoneyRef,
    description: "The whole run's cost: the sum of the model spans' own cost (Run.cost).",
    select: { run: { select: { cost: true } } },
    resolve: (trace) => usd(trace.run.cost),
  }),
  costUnpriced: t.boolean({
    description: "A model span of the trace had no price when it ended (Span.costUnpriced): `cost` leaves it out, so the run cost more than it says.",
    select: { run: { select: { costUnpriced: true } } },
    resolve: (trace) => trace.run.costUnpriced,
  }),
}));

builder.prismaObjectFields(WorkspaceNode, (t) => ({
  cost: t.field({
    type: MoneyRef,
    description:
      "What the runs admitted in the workspace cost: the sum of their Run.cost, or with `since` the sum of their model calls that ended at or after it. Calls without a price count nothing: `costUnpriced` (same `since`) says whether there were any.",
    args: { since: t.arg({ type: "DateTime" }) },
    resolve: async (workspace, args, ctx) => usd(await ctx.services.costs.costOf({ workspaceId: workspace.id }, args.since)),
  }),
  costUnpriced: t.boolean({
    description:
      "Whether `cost` (with the same `since`) leaves something out: a model call of the workspace's runs (with `since`, one that ended at or after it) had no price. True: the runs cost more than `cost` says.",
    args: { since: t.arg({ type: "DateTime" }) },
    resolve: (workspace, args, ctx) => ctx.services.costs.costUnpriced({ workspaceId: workspace.id }, args.since),
  }),
}));

builder.prismaObjectFields(PrincipalNode, (t) => ({
  cost: t.field({
    type: MoneyRef,
    description:
      "What the principal's runs cost: the sum of their Run.cost, or with `since` the sum of their model calls that ended at or after it. Calls without a price count nothing: `costUnpriced` (same `since`) says whether there were any.",
    args: { since: t.arg({ type: "DateTime" }) },
    resolve: async (principal, args, ctx) => usd(await ctx.services.costs.costOf({ ownerId: principal.id }, args.since)),
  }),
  costUnpriced: t.boolean({
    description:
      "Whether `cost` (with the same `since`) leaves something out: a model call of the principal's runs (with `since`, one that ended at or after it) had no price. True: the runs cost more than `cost` says.",
    args: { since: t.arg({ type: "DateTime" }) },
    resolve: (principal, args, ctx) => ctx.services.costs.costUnpriced({ ownerId: principal.id }, args.since),
  }),
}));
