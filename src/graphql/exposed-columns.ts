// The columns a client's selection of an object needs, when every field it selects there is a
// column the type exposes as it is: a page of linked runs then reads the few columns shown
// instead of the run's forty-odd (its configuration, its goal statement, its answer), which the
// database would send and the server decode for nothing. Any other field — a relation, a
// computed field, one that reads several columns — and the whole row is read, as before.
import { type FieldNode, type GraphQLResolveInfo, isAbstractType, isObjectType, Kind, type SelectionSetNode } from "graphql";

/** A Prisma select of scalar fields. */
export type Select = Record<string, true>;

/** A select and a text that names it (its columns, sorted), for keys of loads that share it. */
export type Columns = { select: Select; name: string };

/** Per field node of a parsed document (documents are parsed once and reused): the columns for each type, or null for the whole row. */
const planned = new WeakMap<FieldNode, Map<string, Columns | null>>();

/**
 * The select that covers what `info`'s field selects on `typeName` (a member of the union or
 * interface it returns), with `always` added; null when a selected field is not a plain column.
 */
export function exposedColumns(info: GraphQLResolveInfo, typeName: string, always: readonly string[]): Columns | null {
  const node = info.fieldNodes[0]!;
  let byType = planned.get(node);
  if (!byType) planned.set(node, (byType = new Map()));
  // Several field nodes (the same field selected twice) are merged into one plan, keyed by the first.
  const key = info.fieldNodes.length === 1 ? typeName : `${typeName}#${info.fieldNodes.length}`;
  if (byType.has(key)) return byType.get(key)!;
  const columns = named(plan(info, info.fieldNodes, typeName, always));
  byType.set(key, columns);
  return columns;
}

const named = (select: Select | null): Columns | null => select && { select, name: Object.keys(select).sort().join(",") };

/** Per field node: the columns below it, along a path, for a type. */
const plannedBelow = new WeakMap<FieldNode, Map<string, Columns | null>>();

/**
 * As `exposedColumns`, for the fields found along `path` below `info`'s field (every alias of
 * each, through fragments), e.g. a connection's edges → node → target; null also when nothing
 * along the path is selected or a directive decides whether it is.
 */
export function exposedColumnsBelow(info: GraphQLResolveInfo, path: readonly string[], typeName: string, always: readonly string[]): Columns | null {
  const node = info.fieldNodes[0]!;
  let byType = plannedBelow.get(node);
  if (!byType) plannedBelow.set(node, (byType = new Map()));
  const key = `${path.join(".")}:${typeName}#${info.fieldNodes.length}`;
  if (byType.has(key)) return byType.get(key)!;
  let nodes: FieldNode[] | null = [...info.fieldNodes];
  for (const name of path) nodes = nodes && fieldsNamed(info, nodes, name);
  const columns = nodes && nodes.length > 0 ? named(plan(info, nodes, typeName, always)) : null;
  byType.set(key, columns);
  return columns;
}

/** The fields called `name` selected below `nodes`, through fragments; null if a directive is on the way. */
function fieldsNamed(info: GraphQLResolveInfo, nodes: readonly FieldNode[], name: string): FieldNode[] | null {
  const found: FieldNode[] = [];
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode | undefined): boolean => {
    for (const selection of set?.selections ?? []) {
      if (selection.directives?.length) return false;
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value === name) found.push(selection);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (!walk(selection.selectionSet)) return false;
      } else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        const fragment = info.fragments[selection.name.value];
        if (!fragment || !walk(fragment.selectionSet)) return false;
      }
    }
    return true;
  };
  return nodes.every((node) => walk(node.selectionSet)) ? found : null;
}

function plan(info: GraphQLResolveInfo, nodes: readonly FieldNode[], typeName: string, always: readonly string[]): Select | null {
  const type = info.schema.getType(typeName);
  if (!isObjectType(type)) return null;
  const fields = type.getFields();
  const select: Select = {};
  for (const column of always) select[column] = true;
  const seen = new Set<string>();
  // A fragment on the type itself, or on a union or interface it belongs to; one on another type is not its concern.
  const applies = (condition: string | undefined) => condition === undefined || condition === typeName || isAbstractOf(info, condition, typeName);
  const walk = (set: SelectionSetNode | undefined): boolean => {
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        if (name === "__typename") continue;
        if (name === "id") {
          select.id = true;
          continue;
        }
        const column = fields[name]?.extensions?.pothosExposedField;
        // A directive (@include, @skip) or arguments on a field: not planned here.
        if (typeof column !== "string" || selection.arguments?.length || selection.directives?.length) return false;
        select[column] = true;
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (selection.directives?.length) return false;
        if (applies(selection.typeCondition?.name.value) && !walk(selection.selectionSet)) return false;
      } else {
        if (selection.directives?.length) return false;
        const name = selection.name.value;
        if (seen.has(name)) continue;
        seen.add(name);
        const fragment = info.fragments[name];
        if (!fragment) return false;
        if (applies(fragment.typeCondition.name.value) && !walk(fragment.selectionSet)) return false;
      }
    }
    return true;
  };
  return nodes.every((node) => walk(node.selectionSet)) ? select : null;
}

/** Whether `abstract` (the union or an interface) includes `typeName`, so that its fragment applies to it. */
function isAbstractOf(info: GraphQLResolveInfo, abstract: string, typeName: string): boolean {
  const type = info.schema.getType(abstract);
  const member = info.schema.getType(typeName);
  return isAbstractType(type) && isObjectType(member) && info.schema.isSubType(type, member);
}
