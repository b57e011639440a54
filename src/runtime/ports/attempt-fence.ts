// The fence of a run attempt (R18), as the runtime sees it: every write the attempt makes — log
// entries, trace changes, spills, ledger entries, proposals, settling — goes through `write`,
// which checks in the same transaction that the attempt still holds its run. An attempt that was
// taken over or cancelled can write nothing; its first refused write aborts it. The fence is the
// run's (domain/runs/attempt-fence.ts): this port names it for the runtime.
export { type AttemptFence, AttemptFencedError, type Holder, type OnLost, type Transact } from "../../domain/runs/attempt-fence.js";
