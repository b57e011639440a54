// Work that must wait until a transaction committed — announcing what it wrote. A write that can
// run inside someone else's transaction (a run settling writes its answer, links and checkpoint
// with its status) pushes its announcements here; the transaction's owner runs them after commit,
// so nobody hears of a change that was rolled back.
export type AfterCommit = (() => void)[];

export function runAfterCommit(after: AfterCommit): void {
  for (const callback of after.splice(0)) callback();
}
