// Where a run store keeps its output across a page reload: the text it has shown and the position
// (seq) that text ends at, written together under one key, so that a reloaded page shows the same
// text and asks the server for exactly the rest.
import type { OutputState } from "./run-store-state.js";

/** The part of the Web Storage API a run store uses: sessionStorage and localStorage fit as they are. */
export type RunStoreStorage = {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
};

export const storageKey = (runId: string) => `dossier:run-output:${runId}`;

/** The output stored for this run, or null (none, or not one this version wrote). */
export function readStoredOutput(storage: RunStoreStorage, runId: string): OutputState | null {
  try {
    const stored = JSON.parse(storage.getItem(storageKey(runId)) ?? "null") as (OutputState & { v?: number }) | null;
    // Version 1 kept tool-call arguments by call id alone: such output is read again from the start.
    if (stored?.v !== 2 || typeof stored.seq !== "string" || !Array.isArray(stored.calls)) return null;
    // A store keeps its output only when it followed the run from the start (never with afterSeq).
    return { seq: stored.seq, calls: stored.calls, args: stored.args ?? {}, done: stored.done === true, fromStart: true };
  } catch {
    return null;
  }
}

/** Stores the output (a full or unavailable storage only costs the resume: the page works on). */
export function writeStoredOutput(storage: RunStoreStorage, runId: string, output: OutputState): void {
  if (output.seq === undefined) return;
  try {
    storage.setItem(storageKey(runId), JSON.stringify({ v: 2, ...output }));
  } catch {
    // Quota exceeded or storage disabled.
  }
}
