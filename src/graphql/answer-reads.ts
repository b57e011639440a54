// What a mutation's answer shows of the research it reaches. A caller that may not READ it — a key
// without the READ scope, a token without READ on it (as node(id) decides) — is answered the id
// (and `__typename`) of each such object, and a run's status: what a UI needs to go on. Every
// other field answers null. One that may not be null, where nothing above it may be either,
// would leave the whole answer null after the mutation acted: a request asking for one is refused
// before the mutation acts (ForbiddenError as data).
// Research is what a token's READ governs (node(id), granted-nodes.ts): runs, conversations,
// workspaces and what they hold or link. The principal's settings (webhooks, keys, MCP servers,
// skills, schedules, scores) are the business of the scope that manages them. Runs, workspaces
// and conversations a token reaches are checked by nested-grants.ts, in every operation.
import {
  type FragmentDefinitionNode,
  getNamedType,
  type GraphQLCompositeType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  isCompositeType,
  isListType,
  isNonNullType,
  isObjectType,
  isUnionType,
  type SelectionSetNode,
} from "graphql";
import type { GraphQLContext } from "./context.js";
import { readableThroughGrants } from "./granted-nodes.js";
import { GUARDED_TYPES, SHOWN_WITHOUT_READ } from "./nested-grants.js";

/** The types whose fields beyond their id show research. */
export const RESEARCH_TYPES: ReadonlySet<string> = new Set([
  "Run",
  "Conversation",
  "Workspace",
  "Message",
  "RunInput",
  "Trace",
  "Span",
  "SpanEvent",
  "MaterialUse",
  "GoalVersion",
  "Checkpoint",
  "UnavailableCheckpoint",
  "WorkspaceLink",
  "Publication",
  "PublicationVersion",
  "Artifact",
]);

function isResearch(type: GraphQLCompositeType, info: GraphQLResolveInfo): boolean {
  if (isObjectType(type)) return RESEARCH_TYPES.has(type.name);
  return info.schema.getPossibleTypes(type).some((possible) => RESEARCH_TYPES.has(possible.name));
}

/**
 * Shown in a mutation's answer without READ: besides `__typename` and `id`, what every caller
 * without READ sees (SHOWN_WITHOUT_READ: a run's status), and the run a steering input was stored
 * on (steerRun's answer), which shows only what a run shows without READ.
 */
const OPEN_IN_ANSWERS: Readonly<Record<string, ReadonlySet<string>>> = { ...SHOWN_WITHOUT_READ, RunInput: new Set(["run"]) };

/** Whether a field of this type and name shows research beyond an id and a run's status. */
export function showsResearch(parent: GraphQLCompositeType, field: string, info: GraphQLResolveInfo): boolean {
  const open = OPEN_IN_ANSWERS[parent.name];
  return !field.startsWith("__") && field !== "id" && isResearch(parent, info) && !open?.has(field);
}

/** Whether a null here would leave its parent without a value too (a non-null field, or a list of non-null items that is one). */
function cannotBeNull(type: GraphQLOutputType): boolean {
  if (!isNonNullType(type)) return false;
  const inner = type.ofType;
  return isListType(inner) ? cannotBeNull(inner.ofType) : true;
}

/**
 * The first field (`Type.field`) of the root field's answer that shows research beyond an id and
 * a run's status and may not be null where nothing above it may be either: unanswered, it would
 * leave the whole answer null after the mutation acted. A nullable one answers null instead.
 * The fields `readable` names (the caller may read them in this answer) are passed.
 */
export function researchAsked(info: GraphQLResolveInfo, readable: (typename: string, field: string) => boolean = () => false): string | undefined {
  const seen = new Set<string>();
  // A field of an abstract type is readable where it is on every research type the type may be.
  const isReadable = (type: GraphQLCompositeType, field: string) =>
    isObjectType(type)
      ? readable(type.name, field)
      : info.schema.getPossibleTypes(type).every((possible) => !RESEARCH_TYPES.has(possible.name) || readable(possible.name, field));
  const walk = (selections: SelectionSetNode | undefined, parent: GraphQLCompositeType): string | undefined => {
    for (const selection of selections?.selections ?? []) {
      if (selection.kind === "Field") {
        const field = isUnionType(parent) ? undefined : parent.getFields()[selection.name.value];
        // Only what cannot be null reaches up to the answer.
        if (!field || !cannotBeNull(field.type)) continue;
        if (showsResearch(parent, field.name, info) && !isReadable(parent, field.name)) return `${parent.name}.${field.name}`;
        const type = getNamedType(field.type);
        const found = isCompositeType(type) ? walk(selection.selectionSet, type) : undefined;
        if (found) return found;
        continue;
      }
      const fragment: FragmentDefinitionNode | typeof selection | undefined =
        selection.kind === "InlineFragment" ? selection : seen.has(selection.name.value) ? undefined : info.fragments[selection.name.value];
      if (!fragment) continue;
      if (selection.kind === "FragmentSpread") seen.add(selection.name.value);
      const condition = fragment.typeCondition ? info.schema.getType(fragment.typeCondition.name.value) : parent;
      const found = condition && isCompositeType(condition) ? walk(fragment.selectionSet, condition) : undefined;
      if (found) return found;
    }
    return undefined;
  };
  const root = getNamedType(info.returnType);
  if (!cannotBeNull(info.returnType) || !isCompositeType(root)) return undefined;
  for (const node of info.fieldNodes) {
    const found = walk(node.selectionSet, root);
    if (found) return found;
  }
  return undefined;
}

/** The end of a refusal: what the answer may show, and the first field asked beyond it. */
export const answerLimit = (asked: string) => `without READ its answer shows only the id of what it acted on (and a run's status), not ${asked}`;

/** The row name node(id) decides a type's READ by (granted-nodes.ts). */
const rowName = (typename: string) => (typename === "Checkpoint" || typename === "UnavailableCheckpoint" ? "CheckpointVersion" : typename);

/** The id of a field's source row: a checkpoint's source is its workspace's `{ status, checkpoint }`. */
const rowIdOf = (typename: string, source: unknown): unknown =>
  rowName(typename) === "CheckpointVersion" ? (source as { checkpoint?: { id?: unknown } }).checkpoint?.id : (source as { id?: unknown }).id;

const decided = new WeakMap<object, Map<string, Promise<boolean>>>();

/**
 * Whether a field of a mutation's answer shows research the caller may not READ: any, for a key
 * without the READ scope; for a token, what node(id) would not show it (runs, workspaces and
 * conversations aside: nested-grants.ts).
 */
export function unreadInAnswer(source: unknown, info: GraphQLResolveInfo, ctx: GraphQLContext): boolean | Promise<boolean> {
  if (info.operation.operation !== "mutation" || !showsResearch(info.parentType, info.fieldName, info)) return false;
  const { access: scope, scopes } = ctx.actor;
  if (!scope) return scopes !== undefined && !scopes.includes("READ");
  if (GUARDED_TYPES.has(info.parentType.name)) return false;
  const id = rowIdOf(info.parentType.name, source);
  if (typeof id !== "string") return true;
  let known = decided.get(ctx);
  if (!known) decided.set(ctx, (known = new Map()));
  const key = `${rowName(info.parentType.name)}:${id}`;
  if (!known.has(key)) known.set(key, readableThroughGrants(scope, rowName(info.parentType.name), id, ctx.prisma, ctx.actor.principalId));
  return known.get(key)!.then((readable) => !readable);
}
