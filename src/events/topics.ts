// The one typed topic map of Dossier's pub/sub. Publishers (domain services, after commit) and
// subscribers (GraphQL subscriptions) both speak these types; the transport behind them — in
// process or Redis — is chosen by the composition root only.
import { setMaxListeners } from "node:events";
import type { PubSub } from "graphql-yoga";
import type { JsonValue } from "../domain/json-columns.js";
import { createBoundedPubSub } from "./bounded-pub-sub.js";

export { EventLinkLostError, MissedEventsError, SUBSCRIBER_LIMIT, SubscriberOverflowError } from "./bounded-pub-sub.js";

export type WorkspaceEventKind = "GOAL_UPDATED" | "ARCHIVED" | "RESTORED" | "DELETED" | "LINKED" | "UNLINKED" | "RUN_ADMITTED" | "CHECKPOINT_UPDATED";

export type WorkspaceEventMessage = {
  kind: WorkspaceEventKind;
  workspaceId: string;
  /** The goal version the event produced (GOAL_UPDATED only). */
  goalVersion: number | null;
  /** The link created or removed (LINKED, UNLINKED). */
  link: { kind: "CONVERSATION" | "RUN" | "PUBLICATION" | "ARTIFACT"; targetId: string } | null;
  /** The run admitted (RUN_ADMITTED). */
  runId: string | null;
  /** The checkpoint revision the update created (CHECKPOINT_UPDATED). */
  checkpointRevision?: number | null;
  at: string;
};

/** A span's row as it was after a change, with its times as ISO strings. */
export type SpanState = {
  id: string;
  traceId: string;
  parentId: string | null;
  kind: string;
  name: string;
  status: string;
  attributes: JsonValue;
  usage: JsonValue;
  /** The span's own cost in USD as a decimal string (a model call that ended priced), else null. */
  cost: string | null;
  /** The span's model had no price when it ended. */
  costUnpriced: boolean;
  startedAt: string;
  endedAt: string | null;
};

/**
 * A change recorded on a trace. A span change carries the span as it was after it; subscribers
 * read an appended event itself from the database.
 */
export type TraceChangeMessage = {
  traceId: string;
  seq: number;
  type: "SPAN_STARTED" | "SPAN_UPDATED" | "SPAN_ENDED" | "EVENT_APPENDED" | "TRACE_ENDED";
  spanId: string | null;
  eventId: string | null;
  span: SpanState | null;
  at: string;
};

export type RunStatusName = "QUEUED" | "RUNNING" | "WAITING" | "PAUSED" | "SUCCEEDED" | "FAILED" | "CANCELLED" | "TIMED_OUT";

/**
 * A run changed status, or was asked to stop (`stop` is the mode requested), or was given a steering
 * input (`steered`, on run:changes only): in both of the latter the status is unchanged.
 */
export type RunStatusMessage = { runId: string; status: RunStatusName; at: string; stop?: "NOW" | "AFTER_TURN" | "CONCLUDE"; steered?: true };

/**
 * A piece of a model call's live output: `text` continues the call's text (toolCallId null) or
 * one tool call's argument text at character `offset`. Offsets let a subscriber that joined late
 * or heard a snapshot fit every piece in exactly once.
 */
export type RunOutputPart = { toolCallId: string | null; offset: number; text: string };

/** Who asked for a run's snapshot: the subscriber's principal, and the access token it subscribed with, if any. */
export type SnapshotAsker = { principalId: string; tokenId?: string };

/**
 * Live output of a running model call (runOutput). DELTA: what the model produced since the last
 * frame, coalesced; `final` on the call's last frame. SNAPSHOT: everything the call has produced
 * so far, sent when a subscriber asks (`run:output:wanted`); `final` when the call had ended.
 * Not stored: only the instance executing the call holds its output.
 */
export type RunOutputFrame = {
  runId: string;
  spanId: string;
  kind: "DELTA" | "SNAPSHOT";
  parts: RunOutputPart[];
  final: boolean;
  /**
   * The run's model call right before this one (its MODEL_CALL span), null when this is the run's
   * first: a subscriber who gave that call's end knows no earlier end is still to come, without
   * asking the database. Absent when the executing instance does not know (a later attempt's first call).
   */
  follows?: string | null;
};

export type Topics = {
  "run:status": [runId: string, change: RunStatusMessage];
  /** Every run's status changes on one topic: workers listen here for stops and steering inputs of the runs they execute. */
  "run:changes": [change: RunStatusMessage];
  /**
   * A run is ready to be claimed: wakes idle workers on the embedded default (the bus run
   * announcer); PostgreSQL deployments announce on the run queue instead.
   */
  "run:queued": [run: { runId: string }];
  "workspace:event": [workspaceId: string, event: WorkspaceEventMessage];
  "trace:change": [traceId: string, change: TraceChangeMessage];
  /** A run's live model output (runOutput): deltas, and snapshots for subscribers who joined mid-call. */
  "run:output": [runId: string, frame: RunOutputFrame];
  /**
   * A subscriber joined a run mid-call: whichever instance executes the call answers with a
   * snapshot on `run:output`. `asker`: whom the answer's cost is counted against (bus-run-output.ts);
   * an ask without one (from an older server) counts against the run's principal.
   */
  "run:output:wanted": [request: { runId: string; asker?: SnapshotAsker }];
  /**
   * One of the principal's runs changed in a way a run list sees (run_list_change): wakes that
   * principal's runsChanged subscribers, which read the change log from the database.
   */
  "run:list": [principalId: string, change: { principalId: string; at: string }];
  /** A principal's MCP server configuration changed: every instance's registry re-reads it. */
  "mcp:changed": [change: { principalId: string; at: string }];
  /** Webhook events were committed: the instances delivering webhooks look for due attempts at once. */
  "webhook:pending": [pending: { at: string }];
  /** An API key was revoked: every instance closes the subscriptions opened with it. */
  "apikey:revoked": [revoked: { keyId: string; at: string }];
};

/**
 * A publish someone is waiting on: a subscriber's ask for a call's snapshot, and the snapshot that
 * answers it (a subscriber who joined mid-call has nothing of the call until it comes). The Redis
 * bus does not hold these until the end of the turn, as it does other publishes
 * (redis-event-target.ts): in a burst, that end is tens of milliseconds away on each of the two
 * instances. `message` is the JSON the Redis event target writes (its default serializer): a
 * frame's `"kind":"SNAPSHOT"` can only be the frame's own field (no part of a frame has a `kind`,
 * and a quote inside text is escaped).
 */
export function awaitedPublish(topic: string, message: string): boolean {
  return topic === "run:output:wanted" || (topic.startsWith("run:output:") && message.includes('"kind":"SNAPSHOT"'));
}

export type EventBus = PubSub<Topics>;

/** Publishing is all a domain service needs of the bus. */
export type EventPublisher = Pick<EventBus, "publish">;

/**
 * An event bus; pass an event target (e.g. Redis) to fan out across instances. Each subscription
 * holds at most `subscriberLimit` messages its reader has not taken, then ends with
 * SubscriberOverflowError (bounded-pub-sub.ts): a reader that stalls never ends the process.
 * `onGap` registers the bus's listener for the event target's gaps (messages it may not have
 * heard): each ends every open subscription with EventLinkLostError.
 */
export function createEventBus(options?: { eventTarget?: EventTarget; subscriberLimit?: number; onGap?: (listener: () => void) => void }): EventBus {
  if (options?.eventTarget)
    return createBoundedPubSub<Topics>({ eventTarget: options.eventTarget, subscriberLimit: options.subscriberLimit, onGap: options.onGap });
  // In process: one listener per subscription, and a trace may have thousands of subscribers.
  const eventTarget = new EventTarget();
  setMaxListeners(0, eventTarget);
  return createBoundedPubSub<Topics>({ eventTarget, subscriberLimit: options?.subscriberLimit });
}

/** Wakes the principal's live run lists (runsChanged) once a change of one of its runs committed. */
export function publishRunListChange(events: EventPublisher, principalId: string): void {
  events.publish("run:list", principalId, { principalId, at: new Date().toISOString() });
}

/** Announces a run status change on both the run's own topic and the all-runs topic. */
export function publishRunStatus(events: EventPublisher, runId: string, status: RunStatusName, stop?: RunStatusMessage["stop"]): void {
  const change = { runId, status, at: new Date().toISOString(), ...(stop && { stop }) };
  events.publish("run:status", runId, change);
  events.publish("run:changes", change);
}

/**
 * Announces a steering input stored for a run (steerRun) to the workers: the one executing the run
 * delivers it before its next model request, even one whose requests were read before it was stored.
 * Nobody else listens: a run's own subscribers hear of it on its trace once it is delivered.
 */
export function publishRunSteered(events: EventPublisher, runId: string, status: RunStatusName): void {
  events.publish("run:changes", { runId, status, at: new Date().toISOString(), steered: true });
}
