// Fan-out for live traces (T5) and workspaces: a trace or workspace with many watchers would
// otherwise run the same GraphQL selection once per subscriber for every update, and one principal
// holding many identical subscriptions would multiply the database work of each update by their
// number. Each subscriber keeps its own source stream (its own replay position, bounded buffer and
// authorisation check), but the response to one update is executed once per distinct (credential
// and its rights, document, operation, variables except the one that only gives the start
// position) and the same result is sent to every subscriber that asked for exactly that.
// Responses are kept in the trace's update cache (update-cache.ts), with the update's reads.
// A response the database failed for a moment is not kept: each subscriber waiting for it gets
// the failure once (its stream then ends, `ending`), and a later one executes it anew.
import {
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  GraphQLError,
  createSourceEventStream,
  execute,
  type FieldNode,
  getOperationAST,
  Kind,
  print,
  visit,
} from "graphql";
import { maskError } from "graphql-yoga";
import { isTransientDatabaseError } from "../../db/transient-errors.js";
import { UpdateCache } from "./update-cache.js";

/**
 * Subscription fields that resolve to the source event itself and read the same for every
 * subscriber of one credential, with how one update is known among their subscribers: a trace
 * update by its `seq` (a subscriber may replay it from the database, as another object); a
 * workspace event as the one object the event bus hands every subscriber of this instance
 * (in process and from Redis alike), which carries no id of its own.
 */
const SHARED_FIELDS = new Map<string, "seq" | "identity">([
  ["traceUpdates", "seq"],
  ["workspaceEvents", "identity"],
]);
/** The argument that chooses where a subscriber's stream starts, not what an update looks like. */
const POSITION_ARGUMENT = "afterSeq";

type SourceEvent = { seq: number; type: string };
type Subscribe = (args: ExecutionArgs) => Promise<AsyncIterable<ExecutionResult> | ExecutionResult> | AsyncIterable<ExecutionResult> | ExecutionResult;
/** What a shared subscription's results go through, as the full pipeline's do (server/unavailable-responses.ts: a transient failure ends it). */
type Ending = (results: AsyncIterable<ExecutionResult>, args: ExecutionArgs) => AsyncIterable<ExecutionResult>;

export class SharedSubscriptionResults {
  private readonly documentKeys = new WeakMap<DocumentNode, string>();
  /** A number for each event object known by its identity. */
  private readonly eventNumbers = new WeakMap<object, number>();
  private nextEventNumber = 0;
  private readonly cache: UpdateCache;
  private readonly ending: Ending;
  /** Distinct responses executed so far. */
  executions = 0;

  constructor(options: { cache?: UpdateCache; ending?: Ending } = {}) {
    this.cache = options.cache ?? new UpdateCache();
    this.ending = options.ending ?? ((results) => results);
  }

  /**
   * Subscribes. `sharer` names who may share responses: one credential with its rights (subscribers
   * with different rights never share one). A subscription to a shared field gets its own source stream and shared
   * responses; anything else (and any subscription that fails to start) goes to `fallback`.
   */
  async subscribe(args: ExecutionArgs, sharer: string, fallback: Subscribe): Promise<AsyncIterable<ExecutionResult> | ExecutionResult> {
    const shared = this.shareKey(args, sharer);
    if (shared === null) return fallback(args);
    const source = await createSourceEventStream(args);
    // A refused subscription (not found, bad input) is answered by the full pipeline, which
    // masks unexpected errors the way every other operation's are.
    if (!(Symbol.asyncIterator in source)) return fallback(args);
    return this.ending(this.mapShared(source as AsyncIterable<SourceEvent>, shared, args), args);
  }

  /**
   * Each source event's shared response. Not a generator: leaving must return the source stream at
   * once, also while it waits for its next event (a generator's return would wait for that event),
   * so that a subscriber that stops frees its place on the event bus then.
   */
  private mapShared(source: AsyncIterable<SourceEvent>, shared: ShareKey, args: ExecutionArgs): AsyncIterableIterator<ExecutionResult> {
    const events = source[Symbol.asyncIterator]();
    const respond = (event: SourceEvent) =>
      this.respond(`${shared.key}|${this.eventKey(event, shared.known)}`, () => masked(execute({ ...args, rootValue: event })));
    return {
      async next() {
        const step = await events.next();
        return step.done ? { value: undefined, done: true } : { value: await respond(step.value), done: false };
      },
      async return() {
        await events.return?.();
        return { value: undefined, done: true };
      },
      async throw(error?: unknown) {
        await events.return?.();
        throw error;
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  private eventKey(event: SourceEvent, known: ShareKey["known"]): string {
    if (known === "seq") return `${event.seq}|${event.type}`;
    let number = this.eventNumbers.get(event);
    if (number === undefined) this.eventNumbers.set(event, (number = ++this.nextEventNumber));
    return `event#${number}`;
  }

  private respond(key: string, run: () => Promise<ExecutionResult>): Promise<ExecutionResult> {
    return this.cache.read(`response:${key}`, () => {
      this.executions += 1;
      return run();
    });
  }

  /** What makes two subscriptions' responses to one update identical, or null when they may differ. */
  private shareKey(args: ExecutionArgs, sharer: string): ShareKey | null {
    const operation = getOperationAST(args.document, args.operationName ?? undefined);
    if (operation?.operation !== "subscription") return null;
    const [field, ...others] = operation.selectionSet.selections;
    const known = field?.kind === "Field" ? SHARED_FIELDS.get(field.name.value) : undefined;
    if (others.length > 0 || field?.kind !== "Field" || known === undefined || field.directives?.length) return null;
    let documentKey = this.documentKeys.get(args.document);
    if (documentKey === undefined) this.documentKeys.set(args.document, (documentKey = print(args.document)));
    const position = positionOnlyVariable(args, field);
    const variables = Object.entries(args.variableValues ?? {})
      .filter(([name]) => name !== position)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return { key: JSON.stringify([sharer, args.operationName ?? null, variables, documentKey]), known };
  }
}

type ShareKey = { key: string; known: "seq" | "identity" };

/**
 * The variable that gives the shared field's start position and is used nowhere else, or null.
 * Only that one may be left out of the key: a variable is known by where it is used, never by its
 * name (`traceUpdates(runId: $afterSeq)` selects a run).
 */
function positionOnlyVariable(args: ExecutionArgs, field: FieldNode): string | null {
  const argument = field.arguments?.find((arg) => arg.name.value === POSITION_ARGUMENT);
  if (argument?.value.kind !== Kind.VARIABLE) return null;
  const name = argument.value.name.value;
  let uses = 0;
  visit(args.document, {
    VariableDefinition: () => false,
    Variable: (node) => {
      if (node.name.value === name) uses += 1;
    },
  });
  return uses === 1 ? name : null;
}

/**
 * Unexpected resolver errors are masked by Yoga's own masking, as Yoga masks them for every other
 * operation (these responses are executed here, outside Yoga's pipeline). A transient database
 * failure is thrown instead: the response is not kept, and its subscribers' streams end with it.
 */
async function masked(result: ExecutionResult | Promise<ExecutionResult>): Promise<ExecutionResult> {
  const settled = await result;
  if (!settled.errors?.length) return settled;
  const transient = settled.errors.find((error) => !(error.originalError instanceof GraphQLError) && isTransientDatabaseError(error.originalError));
  if (transient) throw transient.originalError;
  return { ...settled, errors: settled.errors.map((error) => maskError(error, "Unexpected error.") as GraphQLError) };
}
