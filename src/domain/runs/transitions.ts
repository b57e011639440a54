// A run's life as data (R1, R17–R19): one row per transition, naming the statuses it leaves and the
// one it reaches and everything that goes with it — the lease, how the attempt ends, how the spans
// still open end, what becomes of open approvals and pending proposals, the conversation's slot,
// the webhook event, and what is announced once the transaction committed. One function
// (apply-transition.ts) executes a row in the caller's transaction; nothing else writes a run's
// status. A new capability that changes a run's state (stop modes, pause, steering, spend caps,
// schedules) is a new row in this table, not a new list of side effects somewhere else. One effect
// goes with the status itself rather than a column: every row that reaches a terminal status
// releases the run's pending steering inputs (steering.ts), so no row can end a run and leave one
// pending.
// The rows are grouped by what they do (transitions-attempt.ts, transitions-stop.ts,
// transitions-pause.ts); what a row says is in transition-row.ts. The table below joins the groups:
// a transition name that no group defines fails to compile.
import type { TransitionName, TransitionRows } from "./transition-row.js";
import { ATTEMPT_TRANSITIONS } from "./transitions-attempt.js";
import { PAUSE_TRANSITIONS } from "./transitions-pause.js";
import { STOP_TRANSITIONS } from "./transitions-stop.js";

export const TRANSITIONS = {
  ...ATTEMPT_TRANSITIONS,
  ...STOP_TRANSITIONS,
  ...PAUSE_TRANSITIONS,
} as const satisfies TransitionRows<TransitionName>;
