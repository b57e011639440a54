// How an interrupted attempt is described on its spans and to the next attempt: what happened to
// it (its outcome) and to which instance, in words an operator reading a trace understands.
import type { AttemptOutcome } from "./vocabulary.js";

export function interruption(attempt: number, instance: string, outcome: AttemptOutcome, next?: number): string {
  const by = next ? `; attempt ${next} took the run over` : "";
  switch (outcome) {
    case "CRASHED":
      return `process died: attempt ${attempt}'s instance ${instance} has no database session left${by}`;
    case "LEASE_LOST":
      return `lease lost: attempt ${attempt}'s instance ${instance} stopped renewing its lease while still connected (frozen or cut off)${by}`;
    case "HANDED_BACK":
      return `handed back: attempt ${attempt}'s instance ${instance} was stopping and released the run${by}`;
    case "COMPLETED":
      return `attempt ${attempt} completed${by}`;
    default: {
      const unknown: never = outcome;
      return String(unknown);
    }
  }
}
