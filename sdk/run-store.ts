// createRunStore(client, runId): one run as a UI shows it — status, answer text, tool calls,
// pending approvals, a trace summary — kept current from three subscriptions (runOutput through
// watchRun, runEvents, traceUpdates), with the actions a UI offers (stop, approve, reject).
// Framework-neutral: subscribe(listener) and getSnapshot() are what React's useSyncExternalStore
// (see @dossier/sdk/react), a Svelte store or a plain callback need. Listeners hear at most once
// per animation frame (once per 16 ms outside a browser), however many deltas arrived meanwhile;
// the snapshot is a new object only then. Streams start with the first listener and stop shortly
// after the last one leaves; a later listener resumes them from where they were.
import { type DossierClient, nodesOf } from "./client.js";
import {
  type AccessOperation,
  CancelRunDocument,
  type CancelMode,
  DecideToolCallDocument,
  RunApprovalsDocument,
  RunEventsDocument,
  type RunStatus,
  RunStoreTraceDocument,
  type ToolApprovalDecision,
} from "./generated/graphql.js";
import { parsePosition } from "./run-output.js";
import {
  applyOutput,
  applyTrace,
  emptyOutput,
  emptyTrace,
  isTerminal,
  type ModelCallText,
  type OutputState,
  type PendingApproval,
  standingOutput,
  summarize,
  type ToolCallState,
  type TraceSummary,
  toolCallsOf,
} from "./run-store-state.js";
import { type RunStoreStorage, readStoredOutput, writeStoredOutput } from "./run-store-storage.js";
import { backoffMs } from "./transport.js";

export type { ModelCallText, PendingApproval, ToolCallState, ToolCallStatus, TokenTotals, TraceSummary } from "./run-store-state.js";
export type { RunStoreStorage } from "./run-store-storage.js";

export type RunStoreOptions = {
  /**
   * The position (RunSnapshot.seq) of the output the app already shows: the store's text then
   * holds only what comes after it. With it, `storage` is neither read nor written.
   */
  afterSeq?: string;
  /**
   * Keeps the output shown and its position across a page reload (e.g. `sessionStorage`): a store
   * created again for the run shows the same text at once and receives exactly the rest.
   */
  storage?: RunStoreStorage;
  /** Runs `flush` when listeners should hear of changes; default: the next animation frame (16 ms without one). */
  schedule?: (flush: () => void) => void;
};

export type RunSnapshot = {
  runId: string;
  /** Null until the server has said it (the first runEvents update). */
  status: RunStatus | null;
  failureReason: string | null;
  /**
   * The text of the latest model call as it is written — the answer once the run has settled. A
   * store that joins a settled run it saw none of shows the run's stored answer. A call cut off
   * mid-answer shows none: empty until the new call that retries it writes.
   */
  answer: string;
  /**
   * Every model call's text seen, in order (the answer is the last one's). A call whose reply was
   * cut off mid-stream (its span ended ERROR; the request is made again as a new call) has none.
   */
  modelCalls: readonly ModelCallText[];
  toolCalls: readonly ToolCallState[];
  /** The calls waiting for a decision (approve/reject), as Run.pendingApprovals lists them. */
  pendingApprovals: readonly PendingApproval[];
  /**
   * What this client's key or token may do with the run (Run.viewerOperations), read with the
   * pending approvals (empty until then): offer approve/reject with DECIDE, and a rejection's
   * reason — the model's next input, as a steering message is — only with ADMIT (an access token
   * has none on a run an API key admitted, and the server refuses its reason there).
   */
  viewerOperations: readonly AccessOperation[];
  trace: TraceSummary;
  /** The position the output shown ends at: give it as `afterSeq` to a store created later. */
  seq: string | undefined;
  /** The run settled and all of its output has arrived. */
  done: boolean;
  /**
   * Why a stream gave up (a refused key, a run that is not visible), or why the run's pending
   * approvals could not be read (after a few tries; the next change reads them again), or null.
   */
  error: string | null;
};

/** An action's outcome: the mutation's typed error, when it was one. */
export type RunActionResult = { ok: true } | { ok: false; typename: string; message: string };

export type RunStore = {
  readonly runId: string;
  getSnapshot(): RunSnapshot;
  subscribe(listener: () => void): () => void;
  /** Stops the run (cancelRun): NOW by default, or after the current turn, or concluding from what it gathered. */
  stop(mode?: CancelMode): Promise<RunActionResult>;
  /**
   * Lets a held tool call run (decideToolCall APPROVE); without an id, the only one the snapshot
   * (getSnapshot()) lists in pendingApprovals. It decides the approval request that snapshot shows
   * for the call (its approvalId), never another: a call the snapshot shows no request for is not
   * decided, and the server refuses a request decided or replaced meanwhile.
   */
  approve(toolCallId?: string, reason?: string): Promise<RunActionResult>;
  /** Declines a held tool call (decideToolCall REJECT), as approve() picks it; the reason is shown to the model. */
  reject(toolCallId?: string, reason?: string): Promise<RunActionResult>;
  /** Ends the streams and forgets the listeners. */
  close(): void;
};

const nextFrame = (flush: () => void) => {
  const frame = (globalThis as { requestAnimationFrame?: (callback: () => void) => unknown }).requestAnimationFrame;
  if (typeof frame === "function") frame(flush);
  else setTimeout(flush, 16);
};

/** How long the streams outlive the last listener: a listener that comes back at once (React's StrictMode) keeps them. */
const LINGER_MS = 100;

export function createRunStore(client: DossierClient, runId: string, options: RunStoreOptions = {}): RunStore {
  const schedule = options.schedule ?? nextFrame;
  // A store given afterSeq holds only the rest of the text: storing that as the whole would be wrong.
  const storage = options.afterSeq === undefined ? options.storage : undefined;
  const stored = storage ? readStoredOutput(storage, runId) : null;
  const output: OutputState = stored ?? emptyOutput(options.afterSeq);
  const trace = emptyTrace();
  let status: RunStatus | null = null;
  let failureReason: string | null = null;
  let runAnswer: string | null = null;
  let pending: PendingApproval[] = [];
  let viewerOperations: readonly AccessOperation[] = [];
  let error: string | null = null;
  let approvalsError: string | null = null;
  const listeners = new Set<() => void>();
  let scheduled = false;
  let closed = false;
  let streams: AbortController | undefined;
  let lingering: ReturnType<typeof setTimeout> | undefined;
  let approvalsAsked = 0;
  let traceEnded = false;

  const build = (): RunSnapshot => {
    // A model call cut off mid-answer shows nothing: only the call that retried it has text.
    const shown = standingOutput(output, trace);
    const last = shown.calls.at(-1);
    return {
      runId,
      status,
      failureReason,
      answer: last?.text || (isTerminal(status) && shown.done && !shown.calls.some((call) => call.text) ? (runAnswer ?? "") : (last?.text ?? "")),
      modelCalls: shown.calls.map((call) => ({ ...call })),
      toolCalls: toolCallsOf(shown, trace, pending),
      pendingApprovals: pending,
      viewerOperations,
      trace: summarize(trace),
      seq: output.seq,
      done: output.done && isTerminal(status),
      error: error ?? approvalsError,
    };
  };
  let snapshot = build();

  const flush = () => {
    scheduled = false;
    if (closed) return;
    snapshot = build();
    if (storage) writeStoredOutput(storage, runId, output);
    for (const listener of [...listeners]) listener();
  };
  const changed = () => {
    if (scheduled || closed) return;
    scheduled = true;
    schedule(flush);
  };

  /** Reads the run's pending approvals; a failed read is tried again a few times, then shown as the error. */
  const refreshApprovals = async () => {
    const asked = ++approvalsAsked;
    const current = () => asked === approvalsAsked && !closed;
    for (let attempt = 0; ; attempt += 1) {
      try {
        const run = (await client.request(RunApprovalsDocument, { id: runId })).node;
        if (!current() || run?.__typename !== "Run") return;
        pending = nodesOf(run.pendingApprovals).filter((approval) => approval.decision === null);
        viewerOperations = run.viewerOperations ?? [];
        approvalsError = null;
        return changed();
      } catch (failure) {
        if (!current()) return;
        if (attempt >= 3) {
          approvalsError = `The run's pending approvals could not be read: ${failure instanceof Error ? failure.message : String(failure)}`;
          return changed();
        }
        await new Promise((resolve) => setTimeout(resolve, backoffMs(failure, attempt)));
        if (!current()) return;
      }
    }
  };

  /** Reads one stream until it completes; after an error opens it again (from where it was) a few times. */
  const follow = async <T>(signal: AbortSignal, open: () => AsyncIterableIterator<T>, apply: (item: T) => void) => {
    for (let attempt = 0; !signal.aborted; attempt += 1) {
      const stream = open();
      const end = () => void stream.return?.();
      signal.addEventListener("abort", end, { once: true });
      try {
        for await (const item of stream) {
          if (signal.aborted) return;
          attempt = 0;
          apply(item);
        }
        return;
      } catch (failure) {
        if (signal.aborted) return;
        if (attempt >= 4) {
          error = failure instanceof Error ? failure.message : String(failure);
          changed();
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, backoffMs(failure, attempt)));
      } finally {
        signal.removeEventListener("abort", end);
      }
    }
  };

  const start = () => {
    const controller = new AbortController();
    streams = controller;
    const { signal } = controller;
    if (!output.done) {
      void follow(
        signal,
        () => client.watchRun(runId, { afterSeq: output.seq }),
        (update) => {
          applyOutput(output, update);
          changed();
        },
      );
    }
    if (isTerminal(status) && traceEnded) return;
    void follow(
      signal,
      () => client.subscribe(RunEventsDocument, { runId }),
      ({ runEvents: event }) => {
        status = event.status;
        failureReason = event.run.failureReason;
        runAnswer = event.run.answer;
        changed();
        void refreshApprovals();
      },
    );
    void follow(
      signal,
      () => client.subscribe(RunStoreTraceDocument, { runId, afterSeq: trace.seq }),
      ({ traceUpdates: update }) => {
        // Fell behind: open it again after what was applied (follow does).
        if (update.kind === "RESYNC_REQUIRED") throw new Error("fell behind the trace");
        // Expired under its retention policy: nothing more will come.
        if (update.kind === "TRACE_EXPIRED") {
          traceEnded = true;
          return changed();
        }
        // graphql-ws re-sends a subscription with its first variables after a reconnect: skip what was applied.
        if (trace.seq !== undefined && parsePosition(update.seq)[0] <= parsePosition(trace.seq)[0]) return;
        if (update.kind === "TRACE_ENDED") traceEnded = true;
        if (applyTrace(trace, update)) void refreshApprovals();
        changed();
      },
    );
  };

  const halt = () => {
    streams?.abort();
    streams = undefined;
  };

  const decide = async (decision: ToolApprovalDecision, toolCallId: string | undefined, reason: string | undefined): Promise<RunActionResult> => {
    // What the page shows (the published snapshot), never what arrived since and is not shown yet.
    const shown = snapshot.pendingApprovals;
    const id = toolCallId ?? (shown.length === 1 ? shown[0]!.toolCallId : undefined);
    if (id === undefined)
      return { ok: false, typename: "NotFoundError", message: shown.length ? "Name the tool call to decide." : "No tool call waits for a decision." };
    // The request the snapshot shows is the one decided (approvalId), never another the id came to name.
    const approvalId = shown.find((approval) => approval.toolCallId === id)?.id;
    if (approvalId === undefined) return { ok: false, typename: "NotFoundError", message: `No approval request is shown for tool call ${id}.` };
    const input = { runId, toolCallId: id, decision, approvalId, ...(reason ? { reason } : {}) };
    const result = (await client.request(DecideToolCallDocument, { input })).decideToolCall;
    await refreshApprovals();
    return result.__typename === "DecideToolCallSuccess" ? { ok: true } : { ok: false, typename: result.__typename, message: result.message };
  };

  return {
    runId,
    getSnapshot: () => snapshot,
    subscribe(listener) {
      listeners.add(listener);
      clearTimeout(lingering);
      if (!streams && !closed) start();
      return () => {
        listeners.delete(listener);
        if (listeners.size > 0) return;
        clearTimeout(lingering);
        lingering = setTimeout(() => listeners.size === 0 && halt(), LINGER_MS);
      };
    },
    async stop(mode) {
      const result = (await client.request(CancelRunDocument, { input: { runId, ...(mode && { mode }) } })).cancelRun;
      if (result.__typename !== "CancelRunSuccess") return { ok: false, typename: result.__typename, message: result.message };
      return { ok: true };
    },
    approve: (toolCallId, reason) => decide("APPROVE", toolCallId, reason),
    reject: (toolCallId, reason) => decide("REJECT", toolCallId, reason),
    close() {
      closed = true;
      clearTimeout(lingering);
      halt();
      listeners.clear();
    },
  };
}
