// The properties a tool's input schema declares for an object of a call's arguments, found by the
// keys that lead to it (`{"file":{"name":…}}` under a schema with `properties.file.properties`):
// what text/unreadable-key.ts reads a key against at every depth. An object's schema is followed
// through `properties`, `additionalProperties`, an array's `items` and local references
// (`#/$defs/…`, `#/definitions/…`); its declared properties are those of its `properties` and of its
// `allOf`, `anyOf` and `oneOf` branches. The schema is the tool's (not trusted): references and
// branches are followed a bounded number of times, each subschema's properties gathered once.

type Schema = { [key: string]: unknown };

/** The deepest trail followed into the schema; an object deeper has no declared properties. */
const MAX_TRAIL = 64;
/** The most references followed in a row, and the deepest branches (allOf/anyOf/oneOf) gathered. */
const MAX_HOPS = 16;

const isSchema = (value: unknown): value is Schema => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * For `schema` (a tool's input schema, or null), a function giving the properties declared for the
 * object that `trail` leads to (eachKey's trail) by name, or null when the schema declares none there.
 */
export function declaredKeys(schema: Record<string, unknown> | null | undefined): (trail: readonly (string | null)[]) => ReadonlyMap<string, unknown> | null {
  if (!isSchema(schema)) return () => null;
  const root = schema;
  const gathered = new Map<Schema, Map<string, unknown> | null>();

  /** The subschema `node` refers to, references followed (undefined when one cannot be). */
  const resolved = (node: unknown): Schema | undefined => {
    let at = node;
    for (let hops = 0; isSchema(at) && typeof at.$ref === "string"; hops += 1) {
      if (hops === MAX_HOPS) return undefined;
      at = target(root, at.$ref);
    }
    return isSchema(at) ? at : undefined;
  };

  /** The properties `node` declares, with those of its branches (the first of each name); null when none does. */
  const propertiesOf = (node: Schema, hops = 0): Map<string, unknown> | null => {
    if (gathered.has(node)) return gathered.get(node)!;
    gathered.set(node, null); // a schema that reaches itself adds nothing more
    let found: Map<string, unknown> | null = null;
    const add = (properties: Map<string, unknown> | null) => {
      if (properties === null) return;
      found ??= new Map();
      for (const [name, value] of properties) if (!found.has(name)) found.set(name, value);
    };
    if (isSchema(node.properties)) add(new Map(Object.entries(node.properties)));
    if (hops < MAX_HOPS) {
      const referred = typeof node.$ref === "string" ? [{ $ref: node.$ref }] : [];
      for (const branch of [referred, node.allOf, node.anyOf, node.oneOf].flatMap((list) => (Array.isArray(list) ? list : []))) {
        const schema = resolved(branch);
        if (schema !== undefined) add(propertiesOf(schema, hops + 1));
      }
    }
    gathered.set(node, found);
    return found;
  };

  /** The subschema of the value under `step` (a key, or null for an array's item) of `node`'s value. */
  const child = (node: Schema, step: string | null): Schema | undefined => {
    if (step === null) return resolved(node.items);
    const declared = propertiesOf(node);
    return resolved(declared?.has(step) ? declared.get(step) : node.additionalProperties);
  };

  return (trail) => {
    if (trail.length > MAX_TRAIL) return null;
    let node = resolved(root);
    for (const step of trail) node = node && child(node, step);
    return node === undefined ? null : propertiesOf(node);
  };
}

/** The subschema a local reference names (`#`, `#/$defs/<name>`, `#/definitions/<name>`), else undefined. */
function target(root: Schema, ref: string): unknown {
  if (!ref.startsWith("#")) return undefined;
  const [group, name, ...rest] = ref.slice(1).split("/").filter(Boolean);
  if (group === undefined) return root;
  const definitions = group === "$defs" || group === "definitions" ? root[group] : undefined;
  const key = name?.replaceAll("~1", "/").replaceAll("~0", "~");
  if (!isSchema(definitions) || key === undefined || rest.length > 0 || !Object.hasOwn(definitions, key)) return undefined;
  return definitions[key];
}
