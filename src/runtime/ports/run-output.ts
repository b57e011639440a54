// The live output port: what a model call produces, reported while it streams, for subscribers
// of the run's output (chat interfaces). Nothing reported here is stored: the finished message is
// the conversation log's, and the runtime writes it there as before.
import type { ModelStreamEvent } from "./model.js";

/**
 * A piece of a model call's output as the runtime reports it: a tool call's delta and the whole
 * call name it by the id Dossier stores it with (call-ids.ts), the one its approval and log entry carry.
 */
export type OutputEvent = Exclude<ModelStreamEvent, { type: "tool_call_delta" }> | { type: "tool_call_delta"; index: number; id: string; delta: string };

/** The output of one model call as it streams. */
export interface ModelCallOutput {
  /** A piece of the model's output; anything but text and tool-call arguments is ignored. */
  report(event: OutputEvent): void;
  /** The call ended (answered, failed or stopped): whatever is still pending goes out at once. */
  end(): void;
}

export interface RunOutput {
  /**
   * Opens the live output of a run's model call, identified by its MODEL_CALL span. `follows`: the
   * run's model call right before it, null for the run's first, undefined when not known.
   * `ownerId`: the run's principal (what its output may cost is counted per principal).
   */
  modelCall(call: { runId: string; ownerId: string; spanId: string; follows?: string | null }): ModelCallOutput;
}
