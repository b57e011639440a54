// workspaceEvents' stream: the workspace's bus events, and RESYNC_REQUIRED in place of the events
// a subscriber that fell too far behind was not kept, or that it may have missed while the bus's
// link to the other instances was lost (the bus ended its subscription: MissedEventsError), after
// which the stream completes.
import { Repeater } from "graphql-yoga";
import { type EventBus, MissedEventsError, type WorkspaceEventKind, type WorkspaceEventMessage } from "../../events/topics.js";

/** An event of workspaceEvents: one committed, or RESYNC_REQUIRED. */
export type WorkspaceEventUpdate = Omit<WorkspaceEventMessage, "kind"> & { kind: WorkspaceEventKind | "RESYNC_REQUIRED" };

/** A Repeater rather than an async generator: a subscriber who leaves while the workspace is quiet releases its listener at once. */
export function workspaceEventStream(events: EventBus, workspaceId: string): Repeater<WorkspaceEventUpdate> {
  return new Repeater(async (push, stop) => {
    const live = events.subscribe("workspace:event", workspaceId)[Symbol.asyncIterator]();
    let next = live.next();
    void stop.then(() => live.return?.());
    try {
      for (let event = await next; !event.done; event = await next) {
        await push(event.value);
        next = live.next();
      }
    } catch (error) {
      if (!(error instanceof MissedEventsError)) throw error;
      await push({ kind: "RESYNC_REQUIRED", workspaceId, goalVersion: null, link: null, runId: null, at: new Date().toISOString() });
    } finally {
      stop();
    }
  });
}
