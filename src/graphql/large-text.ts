// Text fields whose values can be large (a publication version's content, a skill's body, an
// artifact, a trace payload, a checkpoint's texts, a question or goal statement, a tool call's
// arguments, an agent profile's system prompt): what one request can make the server hold and
// send is bounded in two ways. Before execution, the request's cost counts each such field by the
// most characters it can hold, one field value per TEXT_COST_CHARS of them (server/page-cost.ts),
// so a request that could ask for gigabytes is refused before it runs. During execution, the
// texts one request resolves share a budget of bytes (MAX_RESPONSE_BYTES; a list of texts, such as
// a checkpoint's next steps, counts all of its texts): a text that would pass it resolves to a
// ResponseTooLargeError (`RESPONSE_TOO_LARGE`) in the response's errors instead of its value, and
// the rest of the response stays (a non-null field's error nulls its nearest nullable parent, as
// any field error does). The budget holds whatever the texts' real sizes, which a field's bound
// says nothing of when it has none (a span's request, an event's payload).
import { defaultFieldResolver, GraphQLError, type GraphQLFieldResolver, type GraphQLResolveInfo, type GraphQLSchema, isObjectType } from "graphql";

/** The field extension that marks a large text field: its LargeText. */
export const LARGE_TEXT = "largeText";

/** A large text field: the most characters one value can hold, when something bounds it. */
export type LargeText = { maxChars?: number };

/** Characters of a large text field's bound that count as one field value in a request's cost. */
export const TEXT_COST_CHARS = 32_768;

/** Bytes of large texts one response may hold by default (MAX_RESPONSE_BYTES). */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** The extensions of a large text field holding at most `maxChars` characters (unset: unbounded). */
export const largeText = (maxChars?: number) => ({ [LARGE_TEXT]: { maxChars } satisfies LargeText });

/** What a large text field counts for in a request's cost, for each object it is resolved on. */
export function textCost(extensions: Record<string, unknown> | undefined | null): number {
  const maxChars = (extensions?.[LARGE_TEXT] as LargeText | undefined)?.maxChars;
  return maxChars === undefined ? 1 : Math.max(1, Math.ceil(maxChars / TEXT_COST_CHARS));
}

/** A text left out because the response's texts would pass the byte budget. */
export class ResponseTooLargeError extends GraphQLError {
  constructor(maxBytes: number) {
    super(
      `This text would take the response's texts past ${maxBytes} bytes (MAX_RESPONSE_BYTES), so it is left out; ask for fewer items or fields at once, or page through them.`,
      { extensions: { code: "RESPONSE_TOO_LARGE", maxBytes } },
    );
  }
}

type Settings = { settings?: { maxResponseBytes?: number; countRejected?: (reason: string) => void } };

/** Bytes of large texts one response resolved so far, and whether it has left one out. */
type Budget = { bytes: number; refused: boolean };

/** The budgets of responses, by request context (by context and event for a subscription). */
const spent = new WeakMap<object, Budget>();
const spentOnEvents = new WeakMap<object, WeakMap<object, Budget>>();

function budgetOf(context: unknown, info: GraphQLResolveInfo): Budget | undefined {
  if (typeof context !== "object" || context === null) return undefined;
  let budgets: WeakMap<object, Budget> | undefined = spent;
  let key: unknown = context;
  // A subscription's context lasts as long as it does: each event (its root value) is a response of
  // its own — to this subscription alone, though one event object may reach every subscriber.
  if (info.operation.operation === "subscription") {
    key = info.rootValue;
    if (typeof key !== "object" || key === null) return undefined;
    budgets = spentOnEvents.get(context);
    if (!budgets) spentOnEvents.set(context, (budgets = new WeakMap()));
  }
  let budget = budgets.get(key as object);
  if (!budget) budgets.set(key as object, (budget = { bytes: 0, refused: false }));
  return budget;
}

/** The UTF-8 bytes of a text, or of every text of a list; undefined for anything else (null). */
function bytesOf(value: unknown): number | undefined {
  if (typeof value === "string") return Buffer.byteLength(value, "utf8");
  if (!Array.isArray(value)) return undefined;
  return value.reduce<number>((sum, item) => sum + (typeof item === "string" ? Buffer.byteLength(item, "utf8") : 0), 0);
}

function charge(value: unknown, context: unknown, info: GraphQLResolveInfo): unknown {
  const bytes = bytesOf(value);
  if (bytes === undefined) return value;
  const budget = budgetOf(context, info);
  if (!budget) return value;
  const settings = (context as Settings).settings;
  const max = settings?.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  if (budget.bytes + bytes > max) {
    // Counted once a response, however many of its texts are left out, as other refusals are once a request.
    if (!budget.refused) settings?.countRejected?.("RESPONSE_TOO_LARGE");
    budget.refused = true;
    throw new ResponseTooLargeError(max);
  }
  budget.bytes += bytes;
  return value;
}

/** Holds every large text field of the schema to the response's byte budget; returns the fields held. */
export function holdLargeTexts(schema: GraphQLSchema): string[] {
  const held: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith("__")) continue;
    for (const field of Object.values(type.getFields())) {
      if (!field.extensions?.[LARGE_TEXT]) continue;
      const resolve: GraphQLFieldResolver<unknown, unknown> = field.resolve ?? defaultFieldResolver;
      field.resolve = (source, args, context, info) => {
        const value = resolve(source, args, context, info);
        return value instanceof Promise ? value.then((text) => charge(text, context, info)) : charge(value, context, info);
      };
      held.push(`${type.name}.${field.name}`);
    }
  }
  return held;
}
