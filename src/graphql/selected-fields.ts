// Whether a resolver's client asked for a field of the object it returns: lets a resolver leave a
// large column (a version's body) unread when nothing selects it.
import { type GraphQLResolveInfo, Kind, type SelectionSetNode } from "graphql";

/** True when `field` is selected directly below the resolved field, through fragments too. */
export function selectsField(info: GraphQLResolveInfo, field: string): boolean {
  const seen = new Set<string>();
  const within = (set: SelectionSetNode | undefined): boolean =>
    (set?.selections ?? []).some((selection) => {
      if (selection.kind === Kind.FIELD) return selection.name.value === field;
      if (selection.kind === Kind.INLINE_FRAGMENT) return within(selection.selectionSet);
      const name = selection.name.value;
      if (seen.has(name)) return false;
      seen.add(name);
      return within(info.fragments[name]?.selectionSet);
    });
  return info.fieldNodes.some((node) => within(node.selectionSet));
}
