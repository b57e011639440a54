// Refuses any string argument PostgreSQL cannot store as given (a NUL, or an unpaired UTF-16
// surrogate) before a field's resolver runs, so no resolver has to remember to check and nothing
// is written: PostgreSQL rejects NUL mid-transaction, and silently corrupts lone surrogates.
//
// It sits right after ErrorsPlugin in the builder's plugin list. Pothos composes wrapResolve with
// reduceRight, so a later plugin's wrapper runs inside an earlier one's: the ValidationError
// thrown here is caught by ErrorsPlugin and becomes the ValidationError member of the field's
// payload union. A field without ValidationError gets a GraphQLError with code BAD_USER_INPUT
// instead, which Yoga passes through rather than masking as "Unexpected error.".
import SchemaBuilder, { BasePlugin, type PothosOutputFieldConfig, type SchemaTypes } from "@pothos/core";
import { getArgumentValues, GraphQLError, type GraphQLFieldResolver, type GraphQLResolveInfo } from "graphql";
import { ValidationError } from "../domain/errors.js";
import { isCleanDecodedText } from "../domain/global-id.js";
import { describeUnstorable, findInvalidText } from "../domain/text/unstorable-text.js";

/** The plugin's name, for the builder's `plugins` list. */
export const TextInputGuardPlugin = "textInputGuard" as const;

declare global {
  export namespace PothosSchemaTypes {
    export interface Plugins<Types extends SchemaTypes> {
      textInputGuard: PothosTextInputGuardPlugin<Types>;
    }
  }
}

type Resolver<Types extends SchemaTypes> = GraphQLFieldResolver<unknown, Types["Context"], object>;

export class PothosTextInputGuardPlugin<Types extends SchemaTypes> extends BasePlugin<Types> {
  override wrapResolve(resolver: Resolver<Types>, fieldConfig: PothosOutputFieldConfig<Types>): Resolver<Types> {
    // A subscription's arguments are checked once, in subscribe, not again for every event.
    if (fieldConfig.kind === "Subscription") return resolver;
    const guard = guardFor(fieldConfig);
    if (!guard) return resolver;
    return (source, args, context, info) => {
      guard(args, info);
      return resolver(source, args, context, info);
    };
  }

  override wrapSubscribe(subscribe: Resolver<Types> | undefined, fieldConfig: PothosOutputFieldConfig<Types>): Resolver<Types> | undefined {
    const guard = subscribe && guardFor(fieldConfig);
    if (!subscribe || !guard) return subscribe;
    return (source, args, context, info) => {
      guard(args, info);
      return subscribe(source, args, context, info);
    };
  }
}

SchemaBuilder.registerPlugin(TextInputGuardPlugin, PothosTextInputGuardPlugin);

/** The check for one field, decided once at build time; null for a field without arguments. */
function guardFor<Types extends SchemaTypes>(fieldConfig: PothosOutputFieldConfig<Types>): ((args: object, info: GraphQLResolveInfo) => void) | null {
  if (Object.keys(fieldConfig.args).length === 0) return null;
  // pothosErrors is what ErrorsPlugin catches for this field (its own types plus any defaults).
  const errorTypes = fieldConfig.extensions?.["pothosErrors"];
  const typed = Array.isArray(errorTypes) && errorTypes.includes(ValidationError);
  // Arg mappers (Relay's global ids) run before wrapResolve and decode strings, which could hide
  // a NUL in an id that fails to decode; such fields look at the arguments as the client sent them.
  const mapped = fieldConfig.argMappers.length > 0;
  const cursors = CURSOR_ARGUMENTS.filter((name) => name in fieldConfig.args);
  return (args, info) => {
    const raw = mapped ? rawArgs(info) : args;
    const found = findInvalidText(raw) ?? findInvalidCursor(raw as Record<string, unknown>, cursors);
    if (!found) return;
    const message = found.problem === "cursor" ? "is not a cursor: it decodes to a NUL or to bytes that are not UTF-8" : describeUnstorable(found.problem);
    if (typed) throw new ValidationError([{ field: found.field, message }]);
    throw new GraphQLError(`${found.field} ${message}.`, {
      extensions: { code: "BAD_USER_INPUT", field: found.field },
    });
  };
}

/** Arguments that carry a cursor: base64 text, whose decoded content is checked too. */
const CURSOR_ARGUMENTS = ["after", "before"];

/**
 * A cursor that decodes to a NUL or to bytes that are not UTF-8 names no position; checked here so
 * that no list's cursor parser (ours or Pothos's) hands its content to the database.
 */
function findInvalidCursor(args: Record<string, unknown>, names: readonly string[]): { field: string; problem: "cursor" } | null {
  for (const name of names) {
    const value = args[name];
    // Only base64 text decodes to anything; other text is left to the list to refuse as no cursor of its own.
    if (typeof value !== "string" || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) continue;
    const decoded = Buffer.from(value, value.includes("-") || value.includes("_") ? "base64url" : "base64").toString("utf8");
    if (!isCleanDecodedText(decoded)) return { field: name, problem: "cursor" };
  }
  return null;
}

function rawArgs(info: GraphQLResolveInfo): object {
  const field = info.parentType.getFields()[info.fieldName];
  const node = info.fieldNodes[0];
  return field && node ? getArgumentValues(field, node, info.variableValues) : {};
}
