// What a request asks the server to resolve, counted once its variables are known: each field
// counts once for every object it is resolved on, and a page multiplies the objects below it by
// its page size — the `first`/`last` the request passes (inline, as a variable or by a variable's
// default), else the list's default page. So `conversations(first: $n) { runs(first: $n) … }`
// costs n × n whether n is written inline or not. A connection's page size comes from its
// field's PAGE_SIZES extension (graphql/list-connection.ts); a plain list that the client cannot
// page counts as the most items it may hold (its LIST_ITEMS extension: a version's sources, a
// catalog entry's versions), or PLAIN_LIST_ITEMS when it states none. A large text field (its
// LARGE_TEXT extension, graphql/large-text.ts) counts one field value per TEXT_COST_CHARS
// characters it may hold, so a page of long texts costs what it can weigh.
// What `@skip` or `@include` leaves out, with the request's variables, is not counted.
//
// A trace's spans and events are bounded by the trace itself (MAX_TRACE_RECORDS records in all),
// so below one trace they count at most that many, whatever pages nest them. Introspection
// (`__schema`, `__type`) is not counted here, nor held by MAX_QUERY_DEPTH (graphql-armor leaves it
// out): graphql-js's own rule (MaxIntrospectionDepthRule, among the validation rules every
// request passes) refuses its deep nestings of fields, interfaces and possible types.
import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  getArgumentValues,
  getDirectiveValues,
  getNamedType,
  getNullableType,
  getVariableValues,
  GraphQLIncludeDirective,
  GraphQLList,
  type GraphQLSchema,
  GraphQLSkipDirective,
  isAbstractType,
  isUnionType,
  isCompositeType,
  isObjectType,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from "graphql";
import { textCost } from "../graphql/large-text.js";
import { LIST_ITEMS, PAGE_SIZES, type PageSizes, TRACE_RECORDS } from "../graphql/list-connection.js";

/** The type whose objects bound the TRACE_RECORDS lists below them. */
const TRACE_TYPE = "Trace";

/**
 * Fields the walk visits at most, fragments on interfaces and unions walked once per type they
 * name: a document that takes more to cost is refused as costing more than any limit.
 */
export const MAX_VISITS = 20_000;

/** Items a list without pages is counted as: such lists hold what their parent holds (sources, versions), a few each. */
export const PLAIN_LIST_ITEMS = 20;

/** A `first` or `last` the request may not ask for: its value, the largest allowed and the argument's name. */
export type PageRefusal = { argument: "first" | "last"; value: number; max: number; listMax: boolean };

export type CostOptions = {
  /** The largest `first`/`last` of a connection without a list maximum (MAX_PAGE_SIZE). */
  maxPageSize: number;
  /** Records one run's trace keeps (MAX_TRACE_RECORDS); spans and events below one trace count at most this many. */
  traceRecords?: number;
};

export type Cost = { cost: number; refusal?: PageRefusal };

type Walk = {
  /** Fields walked so far: past MAX_VISITS the operation costs more than any limit. */
  visits: number;
  schema: GraphQLSchema;
  fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  options: CostOptions;
  refusal?: PageRefusal;
};

/** Where a selection is resolved: on how many objects, and what bounds the lists directly below it. */
type Place = {
  rows: number;
  /** The page the field above asked for: the items of this object's lists (a connection's edges). */
  page?: number;
  /** At most this many items in all for the lists below (a trace's records). */
  cap?: number;
  /** Objects of the nearest trace above, for the trace-bounded lists below it. */
  traces?: number;
};

/** Each document's operations and fragments, and its operations' costs by the page sizes asked: Yoga's parse cache hands out the same document object for the same text. */
const documents = new WeakMap<DocumentNode, { operations: OperationDefinitionNode[]; fragments: Map<string, FragmentDefinitionNode> }>();
const costs = new WeakMap<OperationDefinitionNode, Map<string, Cost>>();
/** Costs kept for one operation (one per distinct set of page-size values): more start the set again. */
const COSTS_PER_OPERATION = 64;

/**
 * The cost of the request's operation with its variables (their defaults applied), or undefined
 * when there is no such operation or the variables do not coerce (execution says why). Only `Int`
 * variables can size a page, so an operation's cost is kept by their values: a document sent
 * again with the same page sizes is not walked again.
 */
export function requestCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variableValues: Record<string, unknown> | null | undefined,
  options: CostOptions,
): Cost | undefined {
  const { operations, fragments } = partsOf(document);
  const operation = operationName ? operations.find((each) => each.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined;
  if (!operation) return undefined;
  const key = pageKey(operation, variableValues ?? {});
  const kept = key === undefined ? undefined : costs.get(operation);
  const found = key === undefined ? undefined : kept?.get(key);
  if (found) return found;
  const variables = operation.variableDefinitions?.length ? getVariableValues(schema, operation.variableDefinitions, variableValues ?? {}) : { coerced: {} };
  if (!variables.coerced) return undefined;
  const cost = operationCost(schema, operation, fragments, variables.coerced, options);
  if (key !== undefined) {
    const byKey = kept && kept.size < COSTS_PER_OPERATION ? kept : new Map<string, Cost>();
    costs.set(operation, byKey.set(key, cost));
  }
  return cost;
}

function partsOf(document: DocumentNode) {
  let found = documents.get(document);
  if (!found) {
    const operations: OperationDefinitionNode[] = [];
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const definition of document.definitions) {
      if (definition.kind === Kind.OPERATION_DEFINITION) operations.push(definition);
      else if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    }
    documents.set(document, (found = { operations, fragments }));
  }
  return found;
}

/**
 * The values of the operation's `Int` variables (page sizes) and `Boolean` ones (`@skip`,
 * `@include`) as sent (unset, null, a number or a boolean), or undefined when one is something else.
 */
function pageKey(operation: OperationDefinitionNode, values: Record<string, unknown>): string | undefined {
  let key = "";
  for (const definition of operation.variableDefinitions ?? []) {
    let type = definition.type;
    while (type.kind !== Kind.NAMED_TYPE) type = type.type;
    if (type.name.value !== "Int" && type.name.value !== "Boolean") continue;
    const value = values[definition.variable.name.value];
    if (value === undefined) key += "u,";
    else if (value === null) key += "n,";
    else if (typeof value === "number" || typeof value === "boolean") key += `${value},`;
    else return undefined;
  }
  return key;
}

/**
 * The cost of `operation` with `variables` already coerced (defaults applied), and the first
 * page size it asks for beyond what is allowed, if any.
 */
export function operationCost(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
  options: CostOptions,
): Cost {
  const root = schema.getRootType(operation.operation);
  if (!root) return { cost: 0 };
  const walk: Walk = { visits: 0, schema, fragments, variables, options };
  const cost = selectionCost(walk, root, operation.selectionSet, { rows: 1 });
  return { cost, refusal: walk.refusal };
}

function selectionCost(walk: Walk, type: GraphQLCompositeType, selectionSet: SelectionSetNode, at: Place): number {
  // The trace-bounded lists below a trace count its objects (a union's fragment on Trace is one too).
  const place = type.name === TRACE_TYPE ? { ...at, traces: at.rows } : at;
  // On an interface or union, each object is of one type and resolves every fragment that applies
  // to that type: counted as if every object were of the costliest type the fragments name.
  let cost = 0;
  if (isAbstractType(type)) {
    for (const object of typesNamed(walk, type, selectionSet)) cost = Math.max(cost, selectionCost(walk, object, selectionSet, place));
  }
  let own = 0;
  for (const nodes of fieldsOf(walk, type, selectionSet).values()) {
    walk.visits += 1;
    if (walk.visits > MAX_VISITS) return Number.POSITIVE_INFINITY;
    own += place.rows;
    const name = nodes[0]!.name.value;
    if (name.startsWith("__")) continue;
    const field = isUnionType(type) ? undefined : type.getFields()[name];
    if (!field) continue;
    own += place.rows * (textCost(field.extensions) - 1);
    const args = argumentsOf(field, nodes[0]!, walk.variables);
    const below = placeBelow(walk, field, args, place);
    const named = getNamedType(field.type);
    if (!below || !isCompositeType(named)) continue;
    const merged: SelectionSetNode = { kind: Kind.SELECTION_SET, selections: nodes.flatMap((node) => node.selectionSet?.selections ?? []) };
    own += selectionCost(walk, named, merged, below);
  }
  return Math.max(cost, own);
}

/** The objects a field's selection is resolved on, or undefined for a leaf. */
function placeBelow(walk: Walk, field: GraphQLField<unknown, unknown>, args: Record<string, unknown>, place: Place): Place | undefined {
  const isList = getNullableType(field.type) instanceof GraphQLList;
  const sizes = field.extensions?.[PAGE_SIZES] as PageSizes | undefined;
  const asked = sizes || "first" in args || "last" in args ? pageOf(walk, sizes, args) : undefined;
  // Items of a list: its own page, else the page the field above asked for (a connection's edges), else a plain list's few.
  const stated = field.extensions?.[LIST_ITEMS] as number | undefined;
  // A connection that holds at most `stated` items in all serves no page larger.
  const page = asked !== undefined && stated !== undefined ? Math.min(asked, stated) : asked;
  let rows = isList ? place.rows * (page ?? place.page ?? stated ?? PLAIN_LIST_ITEMS) : place.rows;
  if (isList && place.cap !== undefined) rows = Math.min(rows, place.cap);
  const below: Place = { rows, traces: place.traces };
  if (!isList) below.page = page;
  if (field.extensions?.[TRACE_RECORDS] && walk.options.traceRecords !== undefined && place.traces !== undefined) {
    below.cap = place.traces * walk.options.traceRecords;
  }
  return below;
}

/**
 * A paged field's page size, noting a refusal when it asks for more than allowed: a list
 * connection's own largest page, or MAX_PAGE_SIZE for a connection that serves at most its own
 * (smaller) page and says so with hasNextPage.
 */
function pageOf(walk: Walk, sizes: PageSizes | undefined, args: Record<string, unknown>): number {
  const served = sizes?.maxSize ?? walk.options.maxPageSize;
  const allowed = sizes?.listMax ? sizes.maxSize : walk.options.maxPageSize;
  for (const argument of ["first", "last"] as const) {
    const value = args[argument];
    if (typeof value !== "number") continue;
    if (value > allowed && !walk.refusal) walk.refusal = { argument, value, max: allowed, listMax: sizes?.listMax ?? false };
    return Math.max(0, Math.min(value, served));
  }
  return sizes?.defaultSize ?? served;
}

function argumentsOf(field: GraphQLField<unknown, unknown>, node: FieldNode, variables: Record<string, unknown>): Record<string, unknown> {
  try {
    return getArgumentValues(field, node, variables);
  } catch {
    return {}; // execution reports the bad argument
  }
}

/**
 * The fields selected on `type`, grouped by response key as execution merges them, fragments
 * included where they apply to every object of `type`: on it, or on an interface or union it
 * belongs to. On an interface or union, fragments on narrower types are left to typesNamed.
 */
function fieldsOf(walk: Walk, type: GraphQLCompositeType, selectionSet: SelectionSetNode): Map<string, FieldNode[]> {
  const fields = new Map<string, FieldNode[]>();
  eachSelection(
    walk,
    selectionSet,
    (condition) => applies(walk, type, condition),
    (field) => {
      const key = field.alias?.value ?? field.name.value;
      const group = fields.get(key);
      if (group) group.push(field);
      else fields.set(key, [field]);
    },
  );
  return fields;
}

/** The object types of an interface or union `type` that fragments of the selection name (directly, or through an interface or union). */
function typesNamed(walk: Walk, type: GraphQLCompositeType & { name: string }, selectionSet: SelectionSetNode): GraphQLObjectType[] {
  const possible = new Set(walk.schema.getPossibleTypes(type as never));
  const named = new Set<GraphQLObjectType>();
  eachSelection(
    walk,
    selectionSet,
    (condition) => {
      if (condition && condition !== type) {
        for (const object of isAbstractType(condition) ? walk.schema.getPossibleTypes(condition) : isObjectType(condition) ? [condition] : []) {
          if (possible.has(object)) named.add(object);
        }
      }
      return true;
    },
    () => undefined,
  );
  return [...named];
}

/** Whether every object of `type` is of the fragment's type condition (none: the enclosing type). */
function applies(walk: Walk, type: GraphQLCompositeType, condition: GraphQLNamedType | undefined): boolean {
  if (condition === undefined || condition === type) return true;
  return isAbstractType(condition) && isObjectType(type) && walk.schema.isSubType(condition, type);
}

/** Visits the fields of a selection set and of the fragments in it that `enter` accepts (each named fragment once). */
function eachSelection(
  walk: Walk,
  selectionSet: SelectionSetNode,
  enter: (condition: GraphQLNamedType | undefined) => boolean,
  visit: (field: FieldNode) => void,
): void {
  const seen = new Set<string>();
  const walkSet = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      // What `@skip` or `@include` leaves out is not resolved, so not counted.
      if (!included(walk, selection)) continue;
      if (selection.kind === Kind.FIELD) {
        visit(selection);
        continue;
      }
      let condition: string | undefined;
      let inner: SelectionSetNode;
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        condition = selection.typeCondition?.name.value;
        inner = selection.selectionSet;
      } else {
        const spread = walk.fragments.get(selection.name.value);
        if (!spread || seen.has(spread.name.value)) continue;
        seen.add(spread.name.value);
        condition = spread.typeCondition.name.value;
        inner = spread.selectionSet;
      }
      const conditionType = condition === undefined ? undefined : walk.schema.getType(condition);
      if (condition !== undefined && !conditionType) continue;
      if (enter(conditionType)) walkSet(inner);
    }
  };
  walkSet(selectionSet);
}

/** Whether `@skip` and `@include` (with the request's variables) keep the selection. */
function included(walk: Walk, node: SelectionSetNode["selections"][number]): boolean {
  if (!node.directives?.length) return true;
  if (getDirectiveValues(GraphQLSkipDirective, node, walk.variables)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, node, walk.variables)?.if !== false;
}
