// What an access token's holder may reach (createAccessToken). A token names a few workspaces,
// conversations or runs and the operations allowed on each; a request with one runs only these
// root fields, each checked against the grants before its resolver runs:
//   - reads (READ): node, workspace, run answer null outside the grants (node also answers what a
//     readable workspace links or holds and the traces of its runs: granted-nodes.ts; a workspace's
//     READ and SUBSCRIBE reach the runs and conversations linked to it as well); workspaces,
//     runs and conversations list only granted ones (graphql/types/owned.ts); searchHistory
//     answers NotFound outside a readable workspace, readMaterial UNAVAILABLE outside its history,
//     evidence null outside the messages node(id) shows;
//   - subscriptions (SUBSCRIBE): runEvents, runOutput, traceUpdates, workspaceEvents, and runsChanged
//     listing only the runs the grants let it subscribe to; they end
//     with "token expired" when the token does, and with GRANT_WITHDRAWN when the workspace link
//     that let it reach the run is removed (withdrawn-grants.ts);
//   - mutations: admitRun, steerRun and updateRunTags (ADMIT; admitRun's materials only from the
//     histories READ reaches, checked by the admission itself: domain/workspace/material-reach.ts;
//     admitRun into a conversation needs READ on it too, ForbiddenError otherwise: root-rules.ts;
//     admitRun with multitask INTERRUPT also CANCEL on every run it would stop: domain/runs/interrupt-rights.ts),
//     cancelRun, pauseRun and resumeRun (CANCEL),
//     decideToolCall (DECIDE), createScore and deleteScore (SCORE, on what READ would reach) answer NotFound
//     outside the grants (deleteScore also for a score the token did not make: domain/research/score-service.ts).
// Every other root field — minting tokens, keys, webhooks, MCP servers, skills, agent profiles,
// the viewer and its usage — is ForbiddenError (as data where the payload has it). Below the root,
// a run, workspace or conversation reached through a link is there only when a grant covers it,
// and shows more than its id (a run's status) only where the token may READ it (nested-grants.ts);
// a principal shows its id and name only; a publication or version reached below the root is there
// only within the token's reach, as readMaterial sees it (nested-reach.ts).
//
// An API key's scopes are checked first, on every root field, by the table in root-rules.ts: a
// field without a rule there is refused to every key and every token.
//
// A mutation's answer shows research only to a caller that may READ it (answer-reads.ts): a key
// without the READ scope, or a token without READ on what the mutation names, is answered ids and
// a run's status; asking for a field that could only fail is refused before the mutation acts.
//
// A Pothos plugin like the text input guard: it sits right after ErrorsPlugin, so a NotFound or
// ForbiddenError thrown here becomes the payload's typed error; every mutation's payload has
// ForbiddenError (added here), the answer to a key whose scopes lack what the mutation needs.
import SchemaBuilder, { BasePlugin, type PothosOutputFieldConfig, type SchemaTypes } from "@pothos/core";
import { getArgumentValues, GraphQLError, type GraphQLFieldResolver, type GraphQLResolveInfo } from "graphql";
import { ForbiddenError, NotFoundError } from "../domain/errors.js";
import { decodeGlobalId, encodeGlobalId } from "../domain/global-id.js";
import { type AccessOperation, type AccessScope, ACCESS_OPERATIONS, grants } from "../domain/principal/access-scope.js";
import { TOKEN_EXPIRED } from "../domain/principal/access-tokens.js";
import { atExpiry, hasExpired } from "../domain/principal/credential-expiry.js";
import type { GraphQLContext } from "./context.js";
import { answerLimit, RESEARCH_TYPES, researchAsked, unreadInAnswer } from "./answer-reads.js";
import { endingWhen } from "./ending-stream.js";
import { linkedThroughGrant, readableThroughGrants } from "./granted-nodes.js";
import { checkNested, GUARDED_TYPES, shown, shownUnread, unanswered } from "./nested-grants.js";
import { leadsToPublication, REACHED_TYPES, shownInReach } from "./nested-reach.js";
import { missingScopes, ROOT_RULES, type Rule, type TokenRule } from "./root-rules.js";
import { linksRestedOn, whileGranted } from "./withdrawn-grants.js";

export const AccessGrantPlugin = "accessGrants" as const;

declare global {
  export namespace PothosSchemaTypes {
    export interface Plugins<Types extends SchemaTypes> {
      accessGrants: PothosAccessGrantPlugin<Types>;
    }
  }
}

type Args = Record<string, unknown>;

const ROOTS = new Set(["Query", "Mutation", "Subscription"]);
/** Shown whenever their parent is: a readable run's conversation shows its open fields (its log needs a grant or a link). */
const SHOWN_WITH_PARENT = new Set(["Run.conversation"]);

type Resolver<Types extends SchemaTypes> = GraphQLFieldResolver<unknown, Types["Context"], object>;

export class PothosAccessGrantPlugin<Types extends SchemaTypes> extends BasePlugin<Types> {
  // Seen before ErrorsPlugin builds the payload union from it (Pothos applies this hook last plugin first).
  override onOutputFieldConfig(fieldConfig: PothosOutputFieldConfig<Types>): PothosOutputFieldConfig<Types> {
    const errors = (fieldConfig.pothosOptions as { errors?: { types?: unknown[] } }).errors;
    if (fieldConfig.kind !== "Mutation" || !errors || errors.types?.includes(ForbiddenError)) return fieldConfig;
    const withForbidden = { ...errors, types: [...(errors.types ?? []), ForbiddenError] };
    return { ...fieldConfig, pothosOptions: { ...fieldConfig.pothosOptions, errors: withForbidden } as typeof fieldConfig.pothosOptions };
  }

  override wrapResolve(resolver: Resolver<Types>, fieldConfig: PothosOutputFieldConfig<Types>): Resolver<Types> {
    if (fieldConfig.kind === "Subscription") return resolver;
    const key = `${fieldConfig.parentType}.${fieldConfig.name}`;
    const typedErrors = errorTypesOf(fieldConfig);
    if (ROOTS.has(fieldConfig.parentType)) {
      const rule = ROOT_RULES[key];
      return async (source, args, context, info) => {
        const { access: scope, scopes } = (context as GraphQLContext).actor;
        if (scopes) keyRefusal(key, rule, scopes, typedErrors, info);
        if (scopes && !scopes.includes("READ")) keyAnswerRefusal(key, typedErrors, info);
        if (!scope) return resolver(source, args, context, info);
        if (!rule || rule.keysOnly) throw refusal(key, typedErrors);
        if (!(await allowed(rule, scope, info, context as GraphQLContext))) {
          if (rule.denied === "null") return null;
          if (typeof rule.denied === "object") return rule.denied.answer(args as Args);
          throw new NotFoundError("Resource", "");
        }
        await readsRefusal(key, rule, scope, info, context as GraphQLContext, typedErrors);
        await answerRefusal(key, rule, scope, info, context as GraphQLContext, typedErrors);
        return resolver(source, args, context, info);
      };
    }
    // Below the root only these fields matter to a token; every other one keeps its resolver as it is.
    if (!this.guardedBelowRoot(fieldConfig) && !RESEARCH_TYPES.has(fieldConfig.parentType)) {
      // A connection's edges: those of publications or versions are decided on their nodes.
      if (fieldConfig.name !== "edges") return resolver;
      return (source, args, context, info) => {
        const ctx = context as GraphQLContext;
        const result = resolver(source, args, context, info);
        return ctx.actor.access && leadsToPublication(info) ? shownInReach(result, ctx.actor.access, info, ctx) : result;
      };
    }
    return (source, args, context, info) => {
      const ctx = context as GraphQLContext;
      const scope = ctx.actor.access;
      const unread = unreadInAnswer(source, info, ctx);
      if (unread === true) return unanswered(info);
      if (unread !== false) return unread.then((hidden) => (hidden ? unanswered(info) : resolver(source, args, context, info)));
      if (!scope) return resolver(source, args, context, info);
      const show = () => {
        if (SHOWN_WITH_PARENT.has(key)) return resolver(source, args, context, info);
        const result = shown(resolver(source, args, context, info), scope, info, ctx);
        return leadsToPublication(info) ? shownInReach(result, scope, info, ctx) : result;
      };
      const checked = checkNested(source, scope, info, ctx);
      return checked ? checked.then((hidden) => (hidden === null ? null : show())) : show();
    };
  }

  /** A field of a principal, run, workspace or conversation, or one that leads to one of those or to a publication. */
  private guardedBelowRoot(fieldConfig: PothosOutputFieldConfig<Types>): boolean {
    if (fieldConfig.parentType === "Principal" || GUARDED_TYPES.has(fieldConfig.parentType)) return true;
    const named = fieldConfig.type.kind === "List" ? fieldConfig.type.type : fieldConfig.type;
    if (named.kind === "List") return true;
    if (named.kind !== "Object") return false;
    try {
      const name = this.buildCache.getTypeConfig(named.ref).name;
      return GUARDED_TYPES.has(name) || REACHED_TYPES.has(name);
    } catch {
      return true;
    }
  }

  override wrapSubscribe(subscribe: Resolver<Types> | undefined, fieldConfig: PothosOutputFieldConfig<Types>): Resolver<Types> | undefined {
    if (!subscribe) return subscribe;
    const key = `${fieldConfig.parentType}.${fieldConfig.name}`;
    const rule = ROOT_RULES[key];
    return async (source, args, context, info) => {
      const { actor, now } = context as GraphQLContext;
      const { access: scope, scopes, credentialExpiresAt } = actor;
      if (scopes) keyRefusal(key, rule, scopes, [], info);
      if (!scope) {
        // A sign-in token's subscriptions end when it does, over SSE as over graphql-ws.
        const events = await subscribe(source, args, context, info);
        return credentialExpiresAt && isAsyncIterable(events) ? untilExpiry(events, credentialExpiresAt, now) : events;
      }
      if (!rule || rule.keysOnly) throw refusal(key, []);
      if (!(await allowed(rule, scope, info, context as GraphQLContext))) throw new GraphQLError("Not found.", { extensions: { code: "NOT_FOUND" } });
      const ctx = context as GraphQLContext;
      await readsRefusal(key, rule, scope, info, ctx, []);
      // Reached through a workspace's link: the stream ends when the link does (withdrawn-grants.ts).
      const workspaceIds = await linksRestedOn(scope, rule.operation, rule.targets(rawArgs(info)), ctx);
      const events = (await subscribe(source, args, context, info)) as AsyncIterable<unknown>;
      return untilExpiry(whileGranted(events, { workspaceIds, stillAllowed: () => allowed(rule, scope, info, ctx), ctx }), scope.expiresAt, now);
    };
  }
}

SchemaBuilder.registerPlugin(AccessGrantPlugin, PothosAccessGrantPlugin);

function errorTypesOf<Types extends SchemaTypes>(fieldConfig: PothosOutputFieldConfig<Types>): unknown[] {
  const types = fieldConfig.extensions?.["pothosErrors"];
  return Array.isArray(types) ? types : [];
}

/** ForbiddenError as data where the payload has it, otherwise an error with code FORBIDDEN. */
function forbidden(message: string, typedErrors: unknown[]): Error {
  if (typedErrors.includes(ForbiddenError)) return new ForbiddenError(message);
  return new GraphQLError(message, { extensions: { code: "FORBIDDEN", http: { status: 403 } } });
}

/** A root field no token may use. */
const refusal = (key: string, typedErrors: unknown[]): Error => forbidden(`An access token cannot use ${key.split(".")[1]}: use an API key.`, typedErrors);

/** The arguments as the client sent them: Relay's arg mappers have already decoded some ids. */
function rawArgs(info: GraphQLResolveInfo): Args {
  const field = info.parentType.getFields()[info.fieldName];
  const node = info.fieldNodes[0];
  return field && node ? getArgumentValues(field, node, info.variableValues) : {};
}

/** "the conversation" for a conversation's global id: what a refusal for lack of READ names. */
function named(target: unknown): string {
  const decoded = typeof target === "string" ? decodeGlobalId(target) : null;
  return decoded ? `the ${decoded.typename.toLowerCase()}` : "what it names";
}

/** Refuses a token without READ on what the field also shows (Rule.reads), once it may do the rest. */
async function readsRefusal(key: string, rule: TokenRule, scope: AccessScope, info: GraphQLResolveInfo, ctx: GraphQLContext, typedErrors: unknown[]) {
  if (!rule.reads) return;
  for (const target of rule.reads.targets(rawArgs(info))) {
    if (await covers(scope, "READ", target, ctx)) continue;
    const what = named(target);
    throw forbidden(`This access token may not READ ${what}, so it cannot use ${key.split(".")[1]} on ${what}: ${rule.reads.why}.`, typedErrors);
  }
}

/** Refuses a key without the READ scope a mutation whose answer would show research (answer-reads.ts), before it acts. */
function keyAnswerRefusal(key: string, typedErrors: unknown[], info: GraphQLResolveInfo): void {
  const asked = info.operation.operation === "mutation" ? researchAsked(info) : undefined;
  if (!asked) return;
  throw forbidden(`This API key may not READ (its scopes lack it), so it cannot use ${key.split(".")[1]} as asked: ${answerLimit(asked)}.`, typedErrors);
}

/**
 * Refuses a token a mutation whose answer would show research it may not READ (answer-reads.ts),
 * before it acts. What it acted on is readable where one of the ids it names is, as nested-grants.ts
 * decides: a run admitted into a readable workspace or conversation; a workspace or conversation
 * only where that one is readable (a new conversation is not).
 */
async function answerRefusal(key: string, rule: TokenRule, scope: AccessScope, info: GraphQLResolveInfo, ctx: GraphQLContext, typedErrors: unknown[]) {
  const asked = info.operation.operation === "mutation" ? researchAsked(info) : undefined;
  if (!asked) return;
  const targets = rule.targets(rawArgs(info)).filter((target) => target != null);
  const kinds = new Set<string>();
  for (const target of targets)
    if (await covers(scope, "READ", target, ctx)) for (const kind of await readableAround(scope, String(target), ctx)) kinds.add(kind);
  const field = key.split(".")[1];
  if (kinds.size === 0) {
    const what = named(targets[0]);
    throw forbidden(`This access token may not READ ${what}, so it cannot use ${field} on ${what} as asked: ${answerLimit(asked)}.`, typedErrors);
  }
  const unread = researchAsked(
    info,
    (typename, field) => !GUARDED_TYPES.has(typename) || typename === "Run" || kinds.has(typename) || shownUnread(typename, field),
  );
  if (!unread) return;
  const what = `the ${unread.split(".")[0]!.toLowerCase()}`;
  throw forbidden(`This access token may not READ ${what} its answer shows, so it cannot use ${field} as asked: ${answerLimit(unread)}.`, typedErrors);
}

/**
 * Refuses a key without what a root field needs (root-rules.ts), and every key on a root field
 * without a rule: ForbiddenError as data where the payload has it.
 */
function keyRefusal(key: string, rule: Rule | undefined, scopes: readonly AccessOperation[], typedErrors: unknown[], info: GraphQLResolveInfo): void {
  const field = key.split(".")[1];
  const missing = rule ? missingScopes(rule, scopes, ACCESS_OPERATIONS) : [];
  if (rule && missing.length === 0) {
    // What the field also shows (Rule.reads) needs the READ scope, whenever the request names any.
    const reads = rule.keysOnly ? undefined : rule.reads;
    const shows = reads && !scopes.includes("READ") ? reads.targets(rawArgs(info)) : [];
    if (!reads || shows.length === 0) return;
    throw forbidden(`This API key may not READ (its scopes lack it), so it cannot use ${field} on ${named(shows[0])}: ${reads.why}.`, typedErrors);
  }
  const message = !rule
    ? `No API key may use ${field}: it has no rule saying which scope it needs.`
    : rule.operation === "ALL"
      ? `This API key may not ${missing.join(", ")} (its scopes lack it), so it cannot use ${field}, which needs a key with every scope.`
      : `This API key may not ${rule.operation} (its scopes lack it), so it cannot use ${field}.`;
  throw forbidden(message, typedErrors);
}

async function allowed(rule: TokenRule, scope: AccessScope, info: GraphQLResolveInfo, ctx: GraphQLContext): Promise<boolean> {
  if (rule.listed) return true;
  const targets = rule.targets(rawArgs(info));
  for (const target of targets) if (!(await covers(scope, rule.operation, target, ctx))) return false;
  return targets.length > 0;
}

/** Whether the grants allow `operation` on the object a global id names. */
async function covers(scope: AccessScope, operation: AccessOperation, target: unknown, ctx: GraphQLContext): Promise<boolean> {
  // SCORE reaches what READ would, had the SCORE grants been READ grants.
  if (operation === "SCORE") return covers(scoringAsReading(scope), "READ", target, ctx);
  const decoded = typeof target === "string" ? decodeGlobalId(target) : null;
  if (!decoded) return false;
  if (decoded.typename === "Workspace") return grants(scope, operation, "Workspace", decoded.id);
  if (decoded.typename === "Conversation") {
    if (grants(scope, operation, "Conversation", decoded.id)) return true;
    return linkedThroughGrant(scope, operation, { kind: "Conversation", id: decoded.id }, ctx.prisma, ctx.actor.principalId);
  }
  if (decoded.typename !== "Run") {
    return operation === "READ" && readableThroughGrants(scope, decoded.typename, decoded.id, ctx.prisma, ctx.actor.principalId);
  }
  if (grants(scope, operation, "Run", decoded.id)) return true;
  const run = await ctx.prisma.run.findFirst({
    where: { id: decoded.id, ownerId: ctx.actor.principalId },
    select: { workspaceId: true, conversationId: true },
  });
  if (run === null) return false;
  if (grants(scope, operation, "Run", decoded.id, run)) return true;
  return linkedThroughGrant(scope, operation, { kind: "Run", id: decoded.id, conversationId: run.conversationId }, ctx.prisma, ctx.actor.principalId);
}

/** The kinds an answer about a readable target may show in full: a run's own conversation and workspace where the token may READ those too. */
async function readableAround(scope: AccessScope, target: string, ctx: GraphQLContext): Promise<string[]> {
  const decoded = decodeGlobalId(target);
  if (decoded?.typename !== "Run") return decoded ? [decoded.typename] : [];
  const run = await ctx.prisma.run.findFirst({
    where: { id: decoded.id, ownerId: ctx.actor.principalId },
    select: { workspaceId: true, conversationId: true },
  });
  const conversation = run !== null && (await covers(scope, "READ", encodeGlobalId("Conversation", run.conversationId), ctx));
  const workspace = run?.workspaceId != null && grants(scope, "READ", "Workspace", run.workspaceId);
  return ["Run", ...(conversation ? ["Conversation"] : []), ...(workspace ? ["Workspace"] : [])];
}

/** The scope whose READ grants are exactly the SCORE grants of `scope`. */
function scoringAsReading(scope: AccessScope): AccessScope {
  const scoring = scope.grants.filter((grant) => grant.operations.includes("SCORE"));
  return { ...scope, grants: scoring.map((grant) => ({ ...grant, operations: ["READ"] })) };
}

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> => typeof value === "object" && value !== null && Symbol.asyncIterator in value;

/**
 * The events of a subscription until the token expires; then the error that says so. Whether it
 * expired is asked of the clock before each event is handed on, so an event that comes after the
 * instant, before the timer has had its turn (a busy process), is not delivered; the timer is let
 * go as soon as the stream ends by any path (ending-stream.ts).
 */
export function untilExpiry<T>(events: AsyncIterable<T>, expiresAt: Date, now: () => Date): AsyncIterableIterator<T> {
  const expired = () => new GraphQLError(TOKEN_EXPIRED, { extensions: { code: "TOKEN_EXPIRED" } });
  let stopTimer: () => void = () => undefined;
  const ending = new Promise<Error>((resolve) => {
    stopTimer = atExpiry(expiresAt, now, () => resolve(expired()));
  });
  return endingWhen(events, { ending, endedNow: () => (hasExpired(expiresAt, now) ? expired() : undefined), stop: () => stopTimer() });
}
