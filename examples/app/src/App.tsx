// Ask a question in a workspace, watch the answer stream in, stop the run, approve or reject a
// tool call it holds — and reload the page at any moment: the run (?run=…) and the text shown so
// far come back, and the rest follows with nothing repeated or missing (the run store keeps its
// output in sessionStorage).
import { AdmitRunDocument, type DossierClient } from "@dossier/sdk";
import { useRun, useRunOutput, useWorkspaceRuns } from "@dossier/sdk/react";
import { type FormEvent, useEffect, useState } from "react";
import { showRun, shownRun } from "./connection.js";
import { ReadableArguments, Visible } from "./visible.js";
import { exampleWorkspace } from "./workspace.js";

const ACTIVE = new Set(["QUEUED", "RUNNING", "WAITING"]);

export function App({ dossier }: { dossier: DossierClient }) {
  const [workspaceId, setWorkspaceId] = useState<string | null>(null);
  const [runId, setRunId] = useState<string | null>(shownRun);
  const [problem, setProblem] = useState<string | null>(null);
  const runs = useWorkspaceRuns(dossier, workspaceId, { first: 10 });

  useEffect(() => {
    exampleWorkspace(dossier).then(setWorkspaceId, (error: unknown) => setProblem(String(error)));
  }, [dossier]);

  const open = (id: string | null) => {
    setRunId(id);
    showRun(id);
  };

  const ask = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const question = String(new FormData(form).get("question") ?? "").trim();
    if (!question || !workspaceId) return;
    const { admitRun } = await dossier.request(AdmitRunDocument, { input: { workspaceId, question } });
    if (admitRun.__typename !== "AdmitRunSuccess") return setProblem(admitRun.message);
    setProblem(null);
    form.reset();
    open(admitRun.run.id);
    runs.refresh();
  };

  return (
    <main style={{ fontFamily: "system-ui, sans-serif", maxWidth: 760, margin: "2rem auto", padding: "0 1rem" }}>
      <h1>Ask Dossier</h1>
      <form onSubmit={ask} style={{ display: "flex", gap: 8 }}>
        <input name="question" data-testid="question" placeholder="Your question" style={{ flex: 1 }} />
        <button type="submit" data-testid="ask" disabled={!workspaceId}>
          Ask
        </button>
      </form>
      {problem && <p role="alert">{problem}</p>}
      {runId && <RunView dossier={dossier} runId={runId} key={runId} onStatus={runs.refresh} />}
      <h2>Earlier questions</h2>
      <ul data-testid="runs">
        {runs.runs.map((run) => (
          <li key={run.id}>
            <button type="button" onClick={() => open(run.id)}>
              {run.question}
            </button>{" "}
            {run.status}
          </li>
        ))}
      </ul>
    </main>
  );
}

function RunView({ dossier, runId, onStatus }: { dossier: DossierClient; runId: string; onStatus: () => void }) {
  const run = useRun(dossier, runId, { storage: sessionStorage });
  // The list of earlier questions shows each run's status: read it again when this one's changes.
  useEffect(() => {
    if (run.status) onStatus();
  }, [run.status, onStatus]);
  const [acting, setActing] = useState(false);
  // Why the server refused the last Stop, Approve or Reject: shown, as it came.
  const [refused, setRefused] = useState<string | null>(null);
  const act = async (action: () => Promise<{ ok: true } | { ok: false; message: string }>) => {
    setActing(true);
    const result = await action().finally(() => setActing(false));
    setRefused(result.ok ? null : result.message);
  };
  const { tokens } = run.trace;
  // Approve/Reject where the key or token may decide; a reason — the model's next input — only where
  // it may also steer the run (a token's page on a run an API key admitted rejects without one).
  const decides = run.viewerOperations.includes("DECIDE");
  const rejectReason = run.viewerOperations.includes("ADMIT") ? "Rejected in the example app" : undefined;

  return (
    <section data-testid="run" data-status={run.status ?? ""} data-done={String(run.done)}>
      <p>
        <strong data-testid="status">{run.status ?? "…"}</strong>
        {run.failureReason && <span> — {run.failureReason}</span>}{" "}
        {run.status && ACTIVE.has(run.status) && (
          <button type="button" data-testid="stop" disabled={acting} onClick={() => act(run.stop)}>
            Stop
          </button>
        )}
      </p>
      {run.pendingApprovals.map((approval) => (
        <div key={approval.id} data-testid="approval" style={{ border: "1px solid #c90", padding: 8, margin: "8px 0" }}>
          <p>
            The run wants to call{" "}
            <code>
              <Visible text={approval.toolName} />
            </code>{" "}
            {approval.mcpTool && (
              <>
                (MCP{" "}
                <code data-testid="mcp-tool">
                  <Visible text={approval.mcpTool} />
                </code>
                ){" "}
              </>
            )}
            with{" "}
            <code data-testid="arguments">
              <ReadableArguments raw={approval.arguments} />
            </code>
            .
          </p>
          {approval.readableArguments.warnings.map((warning) => (
            <p key={warning} data-testid="arguments-warning" style={{ color: "#8f1d1d" }}>
              ⚠ {warning}
            </p>
          ))}
          {decides && (
            <>
              <button type="button" data-testid="approve" disabled={acting} onClick={() => act(() => run.approve(approval.toolCallId))}>
                Approve
              </button>{" "}
              <button type="button" data-testid="reject" disabled={acting} onClick={() => act(() => run.reject(approval.toolCallId, rejectReason))}>
                Reject
              </button>
            </>
          )}
        </div>
      ))}
      <Answer dossier={dossier} runId={runId} />
      {run.toolCalls.length > 0 && (
        <ul data-testid="tool-calls">
          {run.toolCalls.map((call) => (
            <li key={call.id} data-testid="tool-call" data-status={call.status}>
              <code>
                <Visible text={call.name} />
              </code>
              ({call.argumentsComplete ? <ReadableArguments raw={call.arguments} /> : <Visible text={call.arguments} />}
              {!call.argumentsComplete && <span title="Not all of the arguments are known yet">…</span>}) — {call.status}
              {call.result !== null && <> → {call.result}</>}
            </li>
          ))}
        </ul>
      )}
      <p data-testid="trace" style={{ color: "#666" }}>
        {run.trace.spans} spans · {run.trace.modelCalls} model calls · tokens in {tokens.input} out {tokens.output}
        {run.trace.durationMs !== null && <> · {(run.trace.durationMs / 1000).toFixed(1)} s</>}
      </p>
      {refused && (
        <p role="alert" data-testid="refused">
          {refused}
        </p>
      )}
      {run.error && <p role="alert">{run.error}</p>}
    </section>
  );
}

/** The answer alone: it renders as the text grows, from the run store RunView's useRun already holds. */
function Answer({ dossier, runId }: { dossier: DossierClient; runId: string }) {
  const text = useRunOutput(dossier, runId);
  return (
    <pre data-testid="answer" style={{ whiteSpace: "pre-wrap" }}>
      {text}
    </pre>
  );
}
