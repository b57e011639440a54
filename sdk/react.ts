// @dossier/sdk/react: React hooks over the client kit. React is an optional peer dependency of
// the SDK: only this entry point imports it.
//
//   const run = useRun(dossier, runId, { storage: sessionStorage });
//   run.answer; run.status; run.toolCalls; run.pendingApprovals; run.stop(); run.approve();
//
// run.approve() with no id decides the one approval this render's snapshot lists, never one that
// arrived since; run.approve(approval.toolCallId) the one shown for that call.
//
// Every hook takes the client first. Hooks of one client and run share one run store (created
// with the options of the first), whose streams run while a component uses it.
import { useCallback, useEffect, useMemo, useState, useSyncExternalStore } from "react";
import type { DossierClient } from "./client.js";
import { createRunStore, type RunActionResult, type RunSnapshot, type RunStore, type RunStoreOptions } from "./run-store.js";
import { readWorkspaceRuns, type WorkspaceRun } from "./workspace-runs.js";

export type RunActions = Pick<RunStore, "stop" | "approve" | "reject">;
export type UseRunResult = RunSnapshot & RunActions;

const stores = new WeakMap<DossierClient, Map<string, RunStore>>();

/** The run store of this client and run, shared by every hook that asks for it. */
export function runStoreFor(client: DossierClient, runId: string, options?: RunStoreOptions): RunStore {
  let byRun = stores.get(client);
  if (!byRun) stores.set(client, (byRun = new Map()));
  let store = byRun.get(runId);
  if (!store) byRun.set(runId, (store = createRunStore(client, runId, options)));
  return store;
}

const noRun: RunSnapshot = {
  runId: "",
  status: null,
  failureReason: null,
  answer: "",
  modelCalls: [],
  toolCalls: [],
  pendingApprovals: [],
  viewerOperations: [],
  trace: { spans: 0, modelCalls: 0, toolCalls: 0, tokens: { input: 0, output: 0, cached: 0, reasoning: 0 }, durationMs: null, modelMs: 0, toolMs: 0 },
  seq: undefined,
  done: false,
  error: null,
};
const none = async (): Promise<RunActionResult> => ({ ok: false, typename: "NotFoundError", message: "No run." });
const idle: RunStore = {
  runId: "",
  getSnapshot: () => noRun,
  subscribe: () => () => undefined,
  stop: none,
  approve: none,
  reject: none,
  close: () => undefined,
};

function useStoreOf(client: DossierClient, runId: string | null | undefined, options?: RunStoreOptions): RunStore {
  // The options are read once, when the run's store is created.
  // biome-ignore lint/correctness/useExhaustiveDependencies: see above
  return useMemo(() => (runId ? runStoreFor(client, runId, options) : idle), [client, runId]);
}

/** A run as it goes: its snapshot (status, answer, tool calls, pending approvals, trace summary) and actions. Null runId: nothing yet. */
export function useRun(client: DossierClient, runId: string | null | undefined, options?: RunStoreOptions): UseRunResult {
  const store = useStoreOf(client, runId, options);
  const snapshot = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getSnapshot);
  return useMemo(() => ({ ...snapshot, stop: store.stop, approve: store.approve, reject: store.reject }), [snapshot, store]);
}

/** Only the run's answer text as it is written: the component renders when the text changes, not on other updates. */
export function useRunOutput(client: DossierClient, runId: string | null | undefined, options?: RunStoreOptions): string {
  const store = useStoreOf(client, runId, options);
  const answer = useCallback(() => store.getSnapshot().answer, [store]);
  return useSyncExternalStore(store.subscribe, answer, answer);
}

export type UseWorkspaceRunsResult = { runs: WorkspaceRun[]; loading: boolean; error: string | null; refresh(): void };

/** A workspace's newest runs (`first`, default 20), read when the workspace changes and on refresh(). */
export function useWorkspaceRuns(
  client: DossierClient,
  workspaceId: string | null | undefined,
  { first = 20 }: { first?: number } = {},
): UseWorkspaceRunsResult {
  const [state, setState] = useState<{ runs: WorkspaceRun[]; loading: boolean; error: string | null }>({ runs: [], loading: false, error: null });
  const [asked, setAsked] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `asked` is how refresh() reads again
  useEffect(() => {
    if (!workspaceId) return setState({ runs: [], loading: false, error: null });
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    readWorkspaceRuns(client, workspaceId, { first }).then(
      (runs) => current && setState({ runs, loading: false, error: null }),
      (error: unknown) => current && setState((previous) => ({ ...previous, loading: false, error: error instanceof Error ? error.message : String(error) })),
    );
    return () => {
      current = false;
    };
  }, [client, workspaceId, first, asked]);
  const refresh = useCallback(() => setAsked((n) => n + 1), []);
  return useMemo(() => ({ ...state, refresh }), [state, refresh]);
}
