// What an access token sees below the root field. A run, workspace or conversation is there (its
// id, a run's status) when any grant covers it or a workspace the token may READ or SUBSCRIBE to
// links it; what it holds shows only where the token may READ it — a grant with READ on it or on
// what contains it, or a workspace with READ that links it (in a subscription, SUBSCRIBE counts
// as READ: the events it delivers are what the grant is for). Every other field answers null, or
// FORBIDDEN where it may not be null. A principal shows its id and name only.
import { getNamedType, GraphQLError, type GraphQLResolveInfo, isNonNullType } from "graphql";
import { type AccessOperation, type AccessScope, ACCESS_OPERATIONS, grants, type GrantedKind } from "../domain/principal/access-scope.js";
import type { GraphQLContext } from "./context.js";
import { type LinkedRow, linkedThroughGrants } from "./granted-nodes.js";

export type Row = { id: string; workspaceId?: string | null; conversationId?: string | null };

const PRINCIPAL_FIELDS = new Set(["id", "name", "createdAt"]);
/**
 * What every caller without READ sees of a run, workspace or conversation: in a mutation's answer
 * (answer-reads.ts) and, for a token, below the root. The one table of both.
 */
export const SHOWN_WITHOUT_READ: Readonly<Record<GrantedKind, ReadonlySet<string>>> = {
  Run: new Set(["id", "status"]),
  Workspace: new Set(["id"]),
  Conversation: new Set(["id"]),
};
/**
 * Shown of an object a token may not read below the root: besides, a conversation's title and
 * creation time, so that a page can name the conversation of a run it was granted.
 */
const OPEN_FIELDS: Readonly<Record<GrantedKind, ReadonlySet<string>>> = {
  ...SHOWN_WITHOUT_READ,
  Conversation: new Set([...SHOWN_WITHOUT_READ.Conversation, "title", "createdAt"]),
};
/** Whether a field of a run, workspace or conversation shows where the token may not read it. */
export const shownUnread = (typename: string, field: string): boolean => OPEN_FIELDS[typename as GrantedKind]?.has(field) ?? false;
export const GUARDED_TYPES: ReadonlySet<string> = new Set<GrantedKind>(["Run", "Workspace", "Conversation"]);

/** Whether any grant covers a run, workspace or conversation row reached below the root, leaving aside links. */
function visible(scope: AccessScope, kind: GrantedKind, row: Row): boolean {
  return ACCESS_OPERATIONS.some((operation) => grants(scope, operation, kind, row.id, row));
}

/** The rows (runs or conversations) a workspace granted one of `operations` links: one query for all of them. */
async function linkedOf(scope: AccessScope, kind: GrantedKind, rows: Row[], operations: readonly AccessOperation[], ctx: GraphQLContext): Promise<Set<string>> {
  if (kind === "Workspace" || rows.length === 0) return new Set();
  const linkable: LinkedRow[] = rows.map((row) => ({ kind, id: row.id, conversationId: row.conversationId }));
  return linkedThroughGrants(scope, operations, linkable, ctx.prisma, ctx.actor.principalId);
}

const readingOperations = (info: GraphQLResolveInfo): readonly AccessOperation[] =>
  info.operation.operation === "subscription" ? ["READ", "SUBSCRIBE"] : ["READ"];

/** Per request, and in a subscription per event too: whether the token may read each row ("Run:<id>"), decided once. */
const readableByRequest = new WeakMap<object, Map<string, Promise<boolean>>>();
/** Per subscriber and event: the bus gives one event object to every subscriber, each with its own token. */
const readableByEvent = new WeakMap<object, WeakMap<object, Map<string, Promise<boolean>>>>();

function decisionsOf(info: GraphQLResolveInfo, ctx: GraphQLContext): Map<string, Promise<boolean>> {
  if (info.operation.operation !== "subscription") {
    const known = readableByRequest.get(ctx) ?? new Map<string, Promise<boolean>>();
    readableByRequest.set(ctx, known);
    return known;
  }
  // A subscription decides again for each event (its rootValue): links change while it lasts.
  const event: unknown = info.rootValue;
  if (typeof event !== "object" || event === null) return new Map();
  const events = readableByEvent.get(ctx) ?? new WeakMap<object, Map<string, Promise<boolean>>>();
  readableByEvent.set(ctx, events);
  const known = events.get(event) ?? new Map<string, Promise<boolean>>();
  events.set(event, known);
  return known;
}

/** Which of `rows` the token may read; decides those not yet decided in this request with one query. */
function readable(scope: AccessScope, kind: GrantedKind, rows: Row[], info: GraphQLResolveInfo, ctx: GraphQLContext): Promise<Set<string>> {
  const known = decisionsOf(info, ctx);
  const operations = readingOperations(info);
  const keyOf = (row: Row) => `${kind}:${row.id}`;
  const direct = (row: Row) => operations.some((operation) => grants(scope, operation, kind, row.id, row));
  const open = rows.filter((row) => !known.has(keyOf(row)) && !direct(row));
  const linked = open.length > 0 ? linkedOf(scope, kind, open, operations, ctx) : Promise.resolve(new Set<string>());
  for (const row of rows) if (!known.has(keyOf(row))) known.set(keyOf(row), direct(row) ? Promise.resolve(true) : linked.then((ids) => ids.has(row.id)));
  return Promise.all(rows.map(async (row) => ((await known.get(keyOf(row))) ? row.id : null))).then((ids) => new Set(ids.filter((id) => id !== null)));
}

const forbiddenField = (parentType: string, fieldName: string) =>
  new GraphQLError(`An access token cannot read ${parentType}.${fieldName}.`, { extensions: { code: "FORBIDDEN" } });

/**
 * Null for a field the token may not read (FORBIDDEN where it may not be null), or undefined when
 * it may: a principal's fields beyond its id and name; a run's, workspace's or conversation's
 * beyond what OPEN_FIELDS shows, without READ on it.
 */
export function checkNested(source: unknown, scope: AccessScope, info: GraphQLResolveInfo, ctx: GraphQLContext): Promise<null | undefined> | undefined {
  const { parentType, fieldName } = info;
  if (parentType.name === "Principal" && !PRINCIPAL_FIELDS.has(fieldName)) throw forbiddenField(parentType.name, fieldName);
  if (!GUARDED_TYPES.has(parentType.name)) return undefined;
  const kind = parentType.name as GrantedKind;
  if (OPEN_FIELDS[kind].has(fieldName)) return undefined;
  const row = source as Row;
  return readable(scope, kind, [row], info, ctx).then((ids) => (ids.has(row.id) ? undefined : unanswered(info)));
}

/** What a field the caller may not read answers: null, or FORBIDDEN where it may not be null. */
export function unanswered(info: GraphQLResolveInfo): null {
  if (isNonNullType(info.returnType)) throw forbiddenField(info.parentType.name, info.fieldName);
  return null;
}

/** A run, workspace or conversation outside the grants (and links) reads as absent (or refuses, where absence is not allowed). */
export function shown(result: unknown, scope: AccessScope, info: GraphQLResolveInfo, ctx: GraphQLContext): unknown {
  const kind = getNamedType(info.returnType).name;
  if (kind !== "Run" && kind !== "Workspace" && kind !== "Conversation") return result;
  const check = async (found: unknown): Promise<unknown> => {
    const rows = (Array.isArray(found) ? found : found == null ? [] : [found]) as Row[];
    // Decided for every row at once, ahead of their fields.
    const reading = readable(scope, kind, rows, info, ctx);
    const hidden = rows.filter((row) => !visible(scope, kind, row));
    if (hidden.length === 0) return reading.then(() => found);
    const linked = await linkedOf(scope, kind, hidden, ["READ", "SUBSCRIBE"], ctx);
    await reading;
    if (Array.isArray(found)) return rows.filter((row) => visible(scope, kind, row) || linked.has(row.id));
    if (linked.has(rows[0]!.id)) return found;
    if (isNonNullType(info.returnType)) throw new GraphQLError(`An access token cannot read this ${kind}.`, { extensions: { code: "FORBIDDEN" } });
    return null;
  };
  // Prisma's queries are thenables, not Promises.
  return Promise.resolve(result).then(check);
}
