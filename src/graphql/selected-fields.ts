// Whether a resolver's client asked for a field of the object it returns: lets a resolver leave a
// large column (a version's body) unread when nothing selects it.
import {
  type FieldNode,
  GraphQLIncludeDirective,
  type GraphQLResolveInfo,
  GraphQLSkipDirective,
  getDirectiveValues,
  Kind,
  type SelectionNode,
  type SelectionSetNode,
} from "graphql";

/** Whether `@skip` and `@include`, with the request's variables, leave `selection` in (as execution decides). */
function included(info: GraphQLResolveInfo, selection: SelectionNode): boolean {
  if (getDirectiveValues(GraphQLSkipDirective, selection, info.variableValues)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, selection, info.variableValues)?.if !== false;
}

/** The fields named `name` directly in `set`, through fragments too, as the request's @skip and @include leave them. */
function fieldsNamed(info: GraphQLResolveInfo, set: SelectionSetNode | undefined, name: string, seen = new Set<string>()): FieldNode[] {
  return (set?.selections ?? []).flatMap((selection): FieldNode[] => {
    if (!included(info, selection)) return [];
    if (selection.kind === Kind.FIELD) return selection.name.value === name ? [selection] : [];
    if (selection.kind === Kind.INLINE_FRAGMENT) return fieldsNamed(info, selection.selectionSet, name, seen);
    const fragment = selection.name.value;
    if (seen.has(fragment)) return [];
    seen.add(fragment);
    return fieldsNamed(info, info.fragments[fragment]?.selectionSet, name, seen);
  });
}

/** True when the fields `path` names are selected below the resolved field, one below the other, through fragments too. */
export function selectsPath(info: GraphQLResolveInfo, path: string[]): boolean {
  let nodes: readonly FieldNode[] = info.fieldNodes;
  for (const name of path) nodes = nodes.flatMap((node) => fieldsNamed(info, node.selectionSet, name));
  return nodes.length > 0;
}

/** True when `field` is selected directly below the resolved field, through fragments too. */
export const selectsField = (info: GraphQLResolveInfo, field: string): boolean => selectsPath(info, [field]);
