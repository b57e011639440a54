// A tool's input schema made safe to check a person's edited arguments with, in the process that
// serves every request. The schema is the tool's (an MCP server's, any principal's program) and is
// not trusted: a regular expression in it could take exponential time on a short string, and
// references or combinations could apply it to the arguments exponentially many times. So its
// regular expressions are left out (the tool checks its own arguments anyway), and a schema that
// is too large or deep, or would be applied to these arguments too many times, is not used at all.

/** The most JSON text a schema may take to be checked against. */
export const CHECKED_SCHEMA_MAX_CHARS = 100_000;
/** The deepest a schema's subschemas may nest (its references not counted). */
export const CHECKED_SCHEMA_MAX_DEPTH = 64;
/** The most work one check may take: a (sub)schema applied to a value costs its keywords and the value's entries. */
export const CHECK_BUDGET = 50_000;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

// The keywords whose value is a schema or a list of schemas, and those that name schemas.
const SUBSCHEMAS = new Set([
  "items",
  "prefixItems",
  "additionalItems",
  "additionalProperties",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
  "allOf",
  "anyOf",
  "oneOf",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contentSchema",
]);
const SUBSCHEMA_MAPS = new Set(["properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"]);

const isObject = (value: unknown): value is JsonObject => typeof value === "object" && value !== null && !Array.isArray(value);

/** Sets a key as an own property, `__proto__` included. */
function put(target: JsonObject, key: string, value: Json): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

class Unbounded extends Error {}

/**
 * The schema to check `value` with, or null when none may be used: the schema without `pattern`,
 * `format` and `patternProperties` (and, beside `patternProperties`, without the
 * `additionalProperties` whose reach the patterns decided).
 */
export function boundedSchema(text: string, value: unknown): JsonObject | null {
  if (text.length > CHECKED_SCHEMA_MAX_CHARS) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (!isObject(parsed)) return null;
    const schema = withoutExpressions(parsed, 0) as JsonObject;
    appliedWithin(schema, value as Json);
    return schema;
  } catch {
    return null;
  }
}

function withoutExpressions(schema: Json, depth: number): Json {
  if (!isObject(schema)) return schema;
  if (depth > CHECKED_SCHEMA_MAX_DEPTH) throw new Unbounded();
  const kept: JsonObject = {};
  const sub = (value: Json) => withoutExpressions(value, depth + 1);
  for (const [key, value] of Object.entries(schema)) {
    if (key === "pattern" || key === "format" || key === "patternProperties") continue;
    if (key === "additionalProperties" && schema.patternProperties !== undefined) continue;
    if (SUBSCHEMAS.has(key)) put(kept, key, Array.isArray(value) ? value.map(sub) : sub(value));
    else if (SUBSCHEMA_MAPS.has(key) && isObject(value)) {
      const named: JsonObject = {};
      for (const [name, subschema] of Object.entries(value)) put(named, name, sub(subschema));
      put(kept, key, named);
    } else put(kept, key, value);
  }
  return kept;
}

/** The entries of a value, and of all it holds when `deep`. */
function entries(value: Json, deep: boolean): number {
  if (Array.isArray(value)) return value.length + (deep ? value.reduce<number>((sum, item) => sum + entries(item, true), 0) : 0);
  if (!isObject(value)) return 0;
  const values = Object.values(value);
  return values.length + (deep ? values.reduce<number>((sum, item) => sum + entries(item, true), 0) : 0);
}

/**
 * The schema a reference names, as the check resolves it: "#" the whole schema, "#/$defs/<name>"
 * (or "definitions") one definition, further segments ignored. Any other is not followed.
 */
function resolve(root: JsonObject, ref: string): Json {
  if (!ref.startsWith("#")) throw new Unbounded();
  const [group, name] = ref.slice(1).split("/").filter(Boolean);
  if (group === undefined) return root;
  const definitions = group === "$defs" || group === "definitions" ? root[group] : undefined;
  const key = name?.replaceAll("~1", "/").replaceAll("~0", "~");
  if (!isObject(definitions) || key === undefined || !Object.hasOwn(definitions, key)) throw new Unbounded();
  return definitions[key]!;
}

/**
 * Walks the schema over the value as a check would, each subschema to the values it applies to
 * (every branch of a combination, references followed), and throws once the work passes
 * CHECK_BUDGET: what the check itself would do, bounded before it starts.
 */
function appliedWithin(root: JsonObject, value: Json): void {
  let spent = 0;
  const own = new WeakMap<JsonObject, number>();
  const ownCost = (schema: JsonObject) => {
    let cost = own.get(schema);
    if (cost === undefined)
      own.set(
        schema,
        (cost =
          1 +
          entries(schema, false) +
          entries(schema.properties ?? null, false) +
          entries(schema.enum ?? null, true) +
          entries(schema.const ?? null, true) +
          entries(schema.required ?? null, false)),
      );
    return cost;
  };
  const apply = (schema: Json | undefined, at: Json, depth: number): void => {
    if (!isObject(schema)) return;
    spent += ownCost(schema) + entries(at, schema.uniqueItems === true);
    if (spent > CHECK_BUDGET || depth > 4 * CHECKED_SCHEMA_MAX_DEPTH) throw new Unbounded();
    if (typeof schema.$ref === "string") apply(resolve(root, schema.$ref), at, depth + 1);
    for (const key of ["allOf", "anyOf", "oneOf"]) for (const branch of Array.isArray(schema[key]) ? schema[key] : []) apply(branch, at, depth + 1);
    apply(schema.not, at, depth + 1);
    if (Array.isArray(at)) {
      const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : [];
      at.forEach((item, index) => {
        apply(index < tuple.length ? tuple[index] : Array.isArray(schema.items) ? schema.additionalItems : schema.items, item, depth + 1);
        apply(schema.contains, item, depth + 1);
      });
    } else if (isObject(at)) {
      const properties = isObject(schema.properties) ? schema.properties : {};
      for (const [key, item] of Object.entries(at)) {
        apply(Object.hasOwn(properties, key) ? properties[key] : schema.additionalProperties, item, depth + 1);
        apply(schema.propertyNames, key, depth + 1);
      }
    }
  };
  apply(root, value, 0);
}
