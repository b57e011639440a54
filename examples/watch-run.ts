// An integrator's first script: create a workspace, admit a run in it, and stream the run's
// trace to the terminal as it happens — using nothing but the SDK.
//
//   DOSSIER_URL=http://localhost:4000/graphql DOSSIER_API_KEY=dsk_… \
//     npm run example:watch-run -- "Which EU cell makers plan 2027 capacity?"
//
// The trace stream resumes by itself after a dropped connection (it remembers the last seq).
import { AdmitRunDocument, createClient, CreateWorkspaceDocument, RunDocument, type TraceUpdate } from "../sdk/index.js";

const url = process.env.DOSSIER_URL ?? "http://localhost:4000/graphql";
const apiKey = process.env.DOSSIER_API_KEY;
const question = process.argv[2] ?? "Which European battery cell makers have announced capacity for 2027?";

const dossier = createClient({ url, headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });

async function main(): Promise<number> {
  const created = (
    await dossier.request(CreateWorkspaceDocument, {
      input: { title: "Watched from the SDK", goal: `Answer: ${question}` },
    })
  ).createWorkspace;
  // Payloads are unions: narrow on __typename to reach the success or the typed error.
  if (created.__typename !== "CreateWorkspaceSuccess") {
    console.error(`could not create the workspace: ${created.__typename}: ${created.message}`);
    return 1;
  }
  const workspace = created.workspace;
  console.log(`workspace ${workspace.id} "${workspace.title}" (goal v${workspace.goal.version})`);

  const admitted = (await dossier.request(AdmitRunDocument, { input: { workspaceId: workspace.id, question } })).admitRun;
  if (admitted.__typename !== "AdmitRunSuccess") {
    console.error(`the run was not admitted: ${admitted.__typename}: ${admitted.message}`);
    return 1;
  }
  const runId = admitted.run.id;
  console.log(`run ${runId} admitted (${admitted.run.status})`);

  const depth = new Map<string, number>();
  for await (const update of dossier.traceUpdates(runId)) {
    console.log(describe(update, depth));
  }

  const run = (await dossier.request(RunDocument, { id: runId })).node;
  if (run?.__typename !== "Run") return 1;
  console.log(`run ${run.status}${run.failureReason ? `: ${run.failureReason}` : ""}`);
  if (run.answer) console.log(`answer:\n${run.answer}`);
  return run.status === "SUCCEEDED" ? 0 : 1;
}

/** One line per update, indented by the span's depth in the tree. */
function describe(update: TraceUpdate, depth: Map<string, number>): string {
  const span = update.span;
  let indent = 0;
  if (span) {
    if (!depth.has(span.id)) depth.set(span.id, span.parentId ? (depth.get(span.parentId) ?? 0) + 1 : 0);
    indent = depth.get(span.id)!;
  }
  const pad = "  ".repeat(indent);
  const seq = `#${update.seq}`.padStart(5);
  switch (update.kind) {
    case "SPAN_STARTED":
      return `${seq} ${pad}▶ ${span!.kind} ${span!.name}`;
    case "SPAN_ENDED": {
      const ms = span!.endedAt ? Date.parse(span!.endedAt) - Date.parse(span!.startedAt) : undefined;
      const usage = span!.usage ? ` · tokens in ${span!.usage.input} out ${span!.usage.output}` : "";
      return `${seq} ${pad}■ ${span!.kind} ${span!.name} ${span!.status}${ms === undefined ? "" : ` in ${ms} ms`}${usage}`;
    }
    case "SPAN_UPDATED":
      return `${seq} ${pad}· ${span!.kind} ${span!.name} updated`;
    case "EVENT_APPENDED":
      return `${seq} ${pad}  ${update.event!.kind}: ${oneLine(update.event!.preview)}`;
    case "TRACE_ENDED":
      return `${seq} trace ended`;
    case "RESYNC_REQUIRED":
      return `${seq} fell behind: re-read run.trace and subscribe again`;
    case "TRACE_EXPIRED":
      return `${seq} trace expired on ${update.at} (${update.expiredMode})`;
  }
}

const oneLine = (text: string) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 100 ? `${flat.slice(0, 99)}…` : flat;
};

main()
  .then(async (code) => {
    await dossier.close();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    await dossier.close();
    process.exit(1);
  });
