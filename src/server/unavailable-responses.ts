// A transient database failure (db/transient-errors.ts) met outside a payload union — while a
// query or a subscription's first step reads, or while a mutation's answer is read after its
// change — is the database's moment, not a bug: the client gets a GraphQL error with
// extensions { code: "SERVICE_UNAVAILABLE", retryAfterSeconds } instead of the masked "Unexpected
// error.", and the operator's log a warning instead of an error. Over HTTP, a query's (or a
// subscription's) response that holds only such errors and no data has status 503 and a
// Retry-After header; a mutation's does not, since its change was made and sending it again would
// repeat it. A subscription the database fails at a later step (its stream reading the next
// update, or an update's fields read as it is delivered) ends with the same error
// (endingWhenUnavailable). Every other unexpected error is still masked by Yoga.
//
// The errors are replaced before Yoga's masking sees them (its plugin comes after every plugin
// given to createYoga); graphql-ws runs the same execute and subscribe, so sockets get them too.
import { type DocumentNode, type ExecutionResult, GraphQLError, getOperationAST } from "graphql";
import { handleStreamOrSingleExecutionResult, isAsyncIterable, type Plugin } from "graphql-yoga";
import { isTransientDatabaseError } from "../db/transient-errors.js";
import { RETRY_AFTER_SECONDS, UNAVAILABLE_WARNING } from "../graphql/transient-failures.js";
import type { Logger } from "../logger.js";

export const SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE";

/** A read (or a subscription's first step) failed: nothing was changed, and the same request may be sent again. */
const READ_UNAVAILABLE =
  "The database failed for a moment (it did not answer in time, no connection to it was free, the connection was lost, or a concurrent change won a conflict). Try again after retryAfterSeconds.";
/**
 * A mutation's field failed after its resolver returned: every mutation has a payload union, and
 * a failure inside its work is its ServiceUnavailableError; out here only reading the answer can fail.
 */
const ANSWER_UNAVAILABLE =
  "The mutation's change was made, but the database failed for a moment while its answer was read. Read the object again after retryAfterSeconds rather than repeating the mutation.";

/** A live subscription's step failed: it ended, and subscribing again (after the last seq received) resumes it. */
const LIVE_UNAVAILABLE =
  "The database failed for a moment while this subscription read its next update, so it ended. Subscribe again after retryAfterSeconds: where the field takes afterSeq, with the last seq you received, to get exactly the updates you missed.";

/** The errors whose request may simply be sent again: over HTTP, 503 and Retry-After when nothing else was answered. */
const retryable = new WeakSet<GraphQLError>();

/** A GraphQL error a client can act on: try again after `retryAfterSeconds` (`resend`: the same request, as it is). */
export function unavailableError(
  message: string,
  { from, path, resend }: { from?: GraphQLError; path?: readonly (string | number)[]; resend: boolean },
): GraphQLError {
  const error = new GraphQLError(message, {
    nodes: from?.nodes,
    source: from?.source,
    positions: from?.positions,
    path: from?.path ?? path,
    extensions: { code: SERVICE_UNAVAILABLE, retryAfterSeconds: RETRY_AFTER_SECONDS },
  });
  if (resend) retryable.add(error);
  return error;
}

export function unavailableResponses(logger: Logger): Plugin {
  return {
    onExecute({ args }) {
      const answer = answerFor(args.document, args.operationName);
      return {
        onExecuteDone: (payload) =>
          handleStreamOrSingleExecutionResult(payload, ({ result, setResult }) => {
            const answered = answeredUnavailable(result, answer, logger);
            if (answered) setResult(answered);
          }),
      };
    },
    onSubscribe({ args }) {
      const answer = answerFor(args.document, args.operationName);
      return {
        onSubscribeResult({ result, setResult }) {
          if (isAsyncIterable(result)) return setResult(endingWhenUnavailable(result, args, logger));
          const answered = answeredUnavailable(result, answer, logger);
          if (answered) setResult(answered);
        },
      };
    },
    // Over HTTP only: the status and Retry-After say "try again" to any client, a proxy included.
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || isAsyncIterable(result) || !onlyUnavailable(result)) return;
      const http = { status: 503, headers: { "Retry-After": String(RETRY_AFTER_SECONDS) } };
      setResult({ ...result, extensions: { ...result.extensions, http } });
    },
  };
}

type Answer = { message: string; resend: boolean };

function answerFor(document: DocumentNode, operationName: string | null | undefined): Answer {
  const mutation = getOperationAST(document, operationName ?? undefined)?.operation === "mutation";
  return mutation ? { message: ANSWER_UNAVAILABLE, resend: false } : { message: READ_UNAVAILABLE, resend: true };
}

/** A resolver's error whose cause is a transient database failure (not a GraphQL error of ours). */
function isTransientFailure(error: GraphQLError): boolean {
  const original = error.originalError;
  return original != null && !(original instanceof GraphQLError) && isTransientDatabaseError(original);
}

/** `result` with its transient failures answered as SERVICE_UNAVAILABLE, or undefined when it has none. */
function answeredUnavailable(result: ExecutionResult, { message, resend }: Answer, logger: Logger): ExecutionResult | undefined {
  if (!result.errors?.some(isTransientFailure)) return undefined;
  const errors = result.errors.map((error) => {
    if (!isTransientFailure(error)) return error;
    logger.warn(UNAVAILABLE_WARNING, { error: String(error.originalError), path: error.path?.join(".") });
    return unavailableError(message, { from: error, resend });
  });
  return { ...result, errors };
}

/** No data, and every error says the database failed for a moment and the request may be sent again. */
function onlyUnavailable(result: ExecutionResult): boolean {
  return result.data == null && !!result.errors?.length && result.errors.every((error) => retryable.has(error));
}

/**
 * A subscription's results until the database fails for a moment at one of its later steps (its
 * stream reading the next update, or an update's fields read as it is delivered): then one last
 * result with no data and the SERVICE_UNAVAILABLE error a failed start gets, the failure a warning
 * in the operator's log, and the end. The update that met the failure is not sent, so a subscriber
 * that resumes after the last seq it received gets it whole. Other errors pass as they are (Yoga
 * masks them). Leaving returns the stream at once, also while it waits for its next update.
 */
export function endingWhenUnavailable(
  stream: AsyncIterable<ExecutionResult>,
  operation: { document: DocumentNode; operationName?: string | null },
  logger: Logger,
): AsyncIterableIterator<ExecutionResult> {
  const source = stream[Symbol.asyncIterator]();
  let ended = false;
  const end = (cause: unknown): IteratorResult<ExecutionResult> => {
    ended = true;
    const field = rootFieldOf(operation);
    logger.warn(UNAVAILABLE_WARNING, { error: String(cause), path: field });
    // A stream that failed has ended already; one whose update failed is told to stop here.
    void Promise.resolve(source.return?.()).catch(() => undefined);
    return { value: { data: null, errors: [unavailableError(LIVE_UNAVAILABLE, { path: field ? [field] : undefined, resend: true })] }, done: false };
  };
  return {
    async next() {
      if (ended) return { value: undefined, done: true };
      let next: IteratorResult<ExecutionResult>;
      try {
        next = await source.next();
      } catch (error) {
        if (ended || !isTransientDatabaseError(error)) throw error;
        return end(error);
      }
      if (ended) return { value: undefined, done: true };
      const failure = next.done ? undefined : next.value.errors?.find(isTransientFailure);
      return failure ? end(failure.originalError) : next;
    },
    async return(value?: unknown) {
      ended = true;
      return (await source.return?.(value)) ?? { value: undefined, done: true };
    },
    async throw(error?: unknown) {
      ended = true;
      if (source.throw) return source.throw(error);
      throw error;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** The response key of a subscription's one root field (where its errors are placed). */
function rootFieldOf({ document, operationName }: { document: DocumentNode; operationName?: string | null }): string | undefined {
  const [field] = getOperationAST(document, operationName ?? undefined)?.selectionSet.selections ?? [];
  return field?.kind === "Field" ? (field.alias ?? field.name).value : undefined;
}
