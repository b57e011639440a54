// Ready runs announced on the event bus (the embedded default): the in-process worker, and with
// Redis every instance, hears `run:queued` at once.
import type { RunAnnouncer } from "../../domain/runs/run-announcer.js";
import type { EventPublisher } from "../../events/topics.js";

export function busRunAnnouncer(events: EventPublisher): RunAnnouncer {
  return {
    async announce(runIds) {
      for (const runId of runIds) events.publish("run:queued", { runId });
    },
  };
}
