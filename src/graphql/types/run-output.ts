// runOutput: the text and tool-call arguments a run's model is producing, live, for chat
// interfaces — over graphql-ws and SSE, across instances (trace/output/run-output-updates.ts).
import { GraphQLError } from "graphql";
import { Repeater } from "graphql-yoga";
import { openRunOutput, type RunOutputKind, type RunOutputUpdate, runOutputUpdates } from "../../trace/output/run-output-updates.js";
import { builder } from "../builder.js";
import { DEFAULT_MAX_RESPONSE_BYTES, largeText } from "../large-text.js";
import { type OutputPosition, parseAfterSeq, SEQ_TYPE_NOTE } from "../sequence.js";
import { encodeGlobalId, idOfType } from "../global-id.js";
import { mine } from "./owned.js";

const RunOutputKindEnum = builder.enumType("RunOutputKind", {
  values: {
    TEXT_DELTA: {
      description:
        "More of the model call's text. A subscriber who joins or resumes during a call first gets the call's text so far in one TEXT_DELTA (several, past MAX_RESPONSE_BYTES: see `text`); " +
        "the TEXT_DELTAs of a call add up to its text exactly.",
    },
    TOOL_CALL_DELTA: { description: "More of the arguments (JSON text) of the tool call `toolCallId`, the same way." },
    MESSAGE_DONE: {
      description:
        "The model call ended: its message, if it produced one, is in the run's conversation log (Run.messages). `text` is null. " +
        "A call whose reply was cut off mid-stream (the connection lost, the body ended without a finish, a transient error event) produced none: " +
        "its MODEL_CALL span ends ERROR (traceUpdates) and nothing it streamed stands, so drop it; the request is made again as a new model call, under a new modelCallSpanId.",
    },
    RUN_DONE: { description: "The run settled; the stream completes after this update." },
    RESYNC_REQUIRED: {
      description: "You fell too far behind: read the finished messages from the log and subscribe again with afterSeq from this update.",
    },
  } satisfies Record<RunOutputKind, unknown>,
});

const RunOutputUpdateRef = builder.objectRef<RunOutputUpdate>("RunOutputUpdate").implement({
  description: "A piece of a run's model output, or the end of a model call or of the run.",
  fields: (t) => ({
    seq: t.string({
      description:
        "The position right after this update, greater than every earlier update's: store the last one you rendered and pass it as afterSeq to get exactly the rest, never a repeat " +
        "(what you missed of a running call comes in one TEXT_DELTA, several past MAX_RESPONSE_BYTES). A delta's is `<trace seq>:<characters of its call delivered>`; MESSAGE_DONE's and RUN_DONE's the trace change's seq, as in Trace.lastSeq. " +
        SEQ_TYPE_NOTE,
      resolve: (update) => update.seq,
    }),
    modelCallSpanId: t.id({
      nullable: true,
      description: "The MODEL_CALL span producing the output (a Span id); null for RUN_DONE and RESYNC_REQUIRED.",
      resolve: (update) => (update.modelCallSpanId === null ? null : encodeGlobalId("Span", update.modelCallSpanId)),
    }),
    kind: t.field({ type: RunOutputKindEnum, resolve: (update) => update.kind }),
    text: t.string({
      nullable: true,
      extensions: largeText(),
      description:
        "The text added (TEXT_DELTA, TOOL_CALL_DELTA); null otherwise. One of the response's large texts, held to MAX_RESPONSE_BYTES: " +
        "what would pass it (the text so far of a large call, given to a subscriber who joins mid-call) comes as several deltas within it, each with its own seq. " +
        "Select it once: a second alias of it in the same update can pass the budget, and answers RESPONSE_TOO_LARGE.",
      resolve: (update) => update.text,
    }),
    toolCallId: t.string({
      nullable: true,
      description:
        "The tool call whose arguments grew (TOOL_CALL_DELTA), by its id in the run: the toolCallId of its approval request, its log entry and its trace.",
      resolve: (update) => update.toolCallId,
    }),
  }),
});

builder.subscriptionField("runOutput", (t) =>
  t.field({
    type: RunOutputUpdateRef,
    description:
      "The text and tool-call arguments a run's model is producing, as it produces them (coalesced, a few frames a second), and the end of each model call. " +
      "Deltas are live only: finished messages are read from the conversation log. Completes after RUN_DONE, or after RESYNC_REQUIRED when the subscriber falls too far behind or its server lost its link to the other instances for a while.",
    args: {
      runId: t.arg.id({ required: true }),
      afterSeq: t.arg.string({ description: `The seq of the last update you rendered, or Trace.lastSeq, or a TraceUpdate's seq. ${SEQ_TYPE_NOTE}` }),
    },
    subscribe: async (_root, args, ctx) => {
      const runId = idOfType(String(args.runId), "Run");
      if (!runId) throw notFound();
      // An afterSeq that is not a position is the caller's mistake, told once the run is known to be theirs.
      let afterSeq: OutputPosition = { seq: 0, chars: 0 };
      let badPosition: unknown;
      try {
        afterSeq = parseAfterSeq(args.afterSeq);
      } catch (error) {
        badPosition = error;
      }
      // The subscriber's own runs only (graphql/types/owned.ts, `mine`): another's reads as absent.
      // One statement: that check, and all the stream needs to start (trace/output/output-start.ts).
      const options = { prisma: ctx.prisma, events: ctx.events, runId, afterSeq, bufferLimit: ctx.settings.traceSubscriberBuffer };
      // Each update's text within the response's budget (its `text` is one of the large texts).
      const maxTextBytes = ctx.settings.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
      const opened = openRunOutput({ ...options, ownerId: mine(ctx).ownerId });
      const start = await opened.start.catch((error: unknown) => {
        opened.close();
        throw error;
      });
      if (!start || badPosition) {
        opened.close();
        throw start ? badPosition : notFound();
      }
      // Its asks for snapshots are counted against the subscriber, an access token's against the token: one
      // end user asking over and over for one large run does not hold up its principal's answers on other runs.
      const asker = { principalId: mine(ctx).ownerId, ...(ctx.actor.access ? { tokenId: ctx.actor.access.tokenId } : {}) };
      return untilLeft((signal) => runOutputUpdates({ ...options, opened, signal, maxTextBytes, asker }), opened.close);
    },
    resolve: (update) => update,
  }),
);

const notFound = () => new GraphQLError("Run not found.", { extensions: { code: "NOT_FOUND" } });

/**
 * A Repeater over the stream, so that a subscriber who leaves while the run is idle (queued, or
 * in a long tool call) ends the stream and releases its listeners at once: an async generator
 * waiting for its next update would only see the leaving at that update. `release`: what the
 * stream holds before it is read (listeners opened with its start), let go also when it never is.
 */
export function untilLeft<T>(open: (signal: AbortSignal) => AsyncGenerator<T>, release?: () => void): AsyncIterableIterator<T> {
  const repeater = new Repeater<T>(async (push, stop) => {
    const left = new AbortController();
    void stop.then(() => left.abort());
    try {
      for await (const update of open(left.signal)) await push(update);
    } finally {
      stop();
    }
  });
  if (!release) return repeater;
  // A Repeater returned before its first read never runs its executor, nor so the stream's own end.
  return {
    next: () => repeater.next(),
    return: (value?: unknown) => {
      release();
      return repeater.return(value as T);
    },
    throw: (error?: unknown) => {
      release();
      return repeater.throw(error);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
