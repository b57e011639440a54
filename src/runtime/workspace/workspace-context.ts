// What a workspace run is told when it starts (W9): the frozen goal, the current checkpoint,
// the run's frozen material selection and the history catalog — identities, versions and
// as-of times, never content. It is appended to the log once per run as a CONTEXT entry, so a
// resumed run sees the same listing, and the ledger records what was listed (DISCOVERED) and
// what was frozen for the run (SELECTED). The catalog shown is its first page; the run pages on
// with list_history and searches with search_history (history-tools.ts). A run an access token
// admitted is shown its workspace only if the token may READ it; otherwise the context says that
// it may not read it, and nothing of the workspace (unreadable-workspace.ts).
import { encodeGlobalId } from "../../domain/global-id.js";
import type { LedgerEntry, MaterialLedger } from "../../domain/research/material-ledger.js";
import type { MaterialRead, PublicationService, SelectedMaterial } from "../../domain/research/publication-service.js";
import { recordRevisionSeen } from "../../domain/runs/run-columns.js";
import { type CheckpointRead, type CheckpointService, questionsOf } from "../../domain/workspace/checkpoint-service.js";
import { type SectionProvenance, sectionsOf } from "../../domain/workspace/checkpoint-sections.js";
import type { HistoryCatalog } from "../../domain/workspace/history-catalog.js";
import type { HistoryService } from "../../domain/workspace/history-service.js";
import type { WorkspaceService } from "../../domain/workspace/workspace-service.js";
import { NotFoundError } from "../../domain/errors.js";
import type { RunRecord } from "../ports/run-state.js";
import { within } from "../../domain/transaction.js";
import { continuedVersionLines } from "./continued-publication.js";
import { catalogEntryLine, catalogGaps, discoveredInCatalog } from "./catalog-text.js";
import type { AttemptScope, RunHooks } from "../loop/run-executor.js";
import { caught } from "../loop/attempt-start.js";
import { batchedRead } from "../../domain/batched-reads.js";
import { nextStepsOf } from "../../domain/json-columns.js";
import { reachOfRun } from "../../domain/workspace/material-reach.js";
import { catalogForRunReach } from "./reach-wording.js";
import { UNREADABLE_WORKSPACE_CONTEXT, workspaceUnreadable } from "./unreadable-workspace.js";

const day = (date: Date) => date.toISOString();

/** What the workspace context is read from, and where what it listed is recorded. */
export type WorkspaceContextDeps = {
  workspaces: Pick<WorkspaceService, "visible">;
  publications: Pick<PublicationService, "selectedForRuns" | "continuedBy">;
  history: Pick<HistoryService, "catalog" | "withinReach">;
  checkpoints: Pick<CheckpointService, "current">;
  ledger: Pick<MaterialLedger, "record">;
};

/** What the context says of the run itself: its workspace and the goal frozen at its admission. */
type ContextRun = Pick<RunRecord, "workspaceId" | "goalStatement" | "goalVersionNo">;

export function workspaceContextHook(deps: WorkspaceContextDeps): RunHooks {
  // A run's frozen materials, read with those of the other runs of its claim (batched-reads.ts).
  const selectedFor = batchedRead({
    readMany: (runIds: readonly string[]) => deps.publications.selectedForRuns(runIds),
    keyOf: (runId) => runId,
    none: () => [],
  });
  return {
    beforeFirstTurn: ({ run }) => {
      // The run's materials are read beside the attempt's opening reads: they do not depend on its log.
      // A run that continues no publication has none to read.
      const continued = run.continuesPublicationId ? deps.publications.continuedBy(run.id) : null;
      const materials = caught(Promise.all([selectedFor(run.id), continued]));
      return (scope) => writeContext(deps, scope, materials);
    },
  };
}

/** Appends the run's CONTEXT entry, once per run, and records what it listed. */
async function writeContext(
  deps: WorkspaceContextDeps,
  { run, span, sink, write, log }: AttemptScope,
  materials: Promise<[SelectedMaterial[], MaterialRead | null]>,
): Promise<void> {
  const [selected, continued] = await materials;
  if (!run.workspaceId && selected.length === 0 && !continued) return;
  if (log.ofRun().some((message) => message.role === "CONTEXT")) return;
  const actor = { principalId: run.ownerId };
  const unreadable = workspaceUnreadable(run);
  const workspace = run.workspaceId && !unreadable ? await deps.workspaces.visible(actor, run.workspaceId) : null;
  // What broke a version's or the checkpoint's eligibility is named only within the admitting token's reach (reach-wording.ts).
  const page = workspace ? await deps.history.catalog(actor, workspace.id).catch(ignoreNotFound) : null;
  const catalog = page && (await catalogForRunReach(deps.history, run, page));
  const checkpoint = workspace ? await deps.checkpoints.current(actor, workspace.id, reachOfRun(run)).catch(ignoreNotFound) : null;
  const revisionSeen = workspace?.checkpointRevision ?? 0;
  const text = describe({ run, unreadable, workspaceTitle: workspace?.title ?? null, selected, continued, catalog, checkpoint, revisionSeen });
  const ledger: LedgerEntry[] = [
    ...selected.map((m) => ({
      runId: run.id,
      publicationId: m.publicationId,
      version: m.version,
      publicationVersionId: m.versionId,
      stage: "SELECTED" as const,
    })),
    ...(catalog ? discoveredInCatalog(run.id, catalog) : []),
  ];
  // The ledger, the revision seen and the log entry are written together, once.
  await write(async (tx, after) => {
    await deps.ledger.record(tx, ledger);
    await recordRevisionSeen(tx, run.id, revisionSeen);
    await log.append(within(tx, after), [{ role: "CONTEXT", content: text }]);
  });
  run.checkpointRevisionSeen = revisionSeen;
  await sink.event(span, "CONTEXT", {
    catalogEntries: catalog?.entries.length ?? 0,
    catalogComplete: catalog?.complete ?? true,
    selected: selected.length,
    checkpointRevision: revisionSeen,
    continuedVersion: continued?.version?.version ?? null,
  });
}

function ignoreNotFound(error: unknown): null {
  if (error instanceof NotFoundError) return null;
  throw error;
}

type ContextParts = {
  run: ContextRun;
  /** The run's admitting token may not READ its workspace: nothing of it is shown. */
  unreadable: boolean;
  workspaceTitle: string | null;
  selected: SelectedMaterial[];
  /** The version of the publication the run continues (continuesPublicationId), as read. */
  continued: MaterialRead | null;
  catalog: HistoryCatalog | null;
  checkpoint: CheckpointRead | null;
  revisionSeen: number;
};

function describe(input: ContextParts): string {
  const lines = ["<workspace-context>", ...workspaceLines(input), ""];
  lines.push(...checkpointLines(input), ...selectionLines(input.selected), ...continuedVersionLines(input.continued));
  if (input.catalog) lines.push(...catalogLines(input.catalog));
  lines.push(
    "",
    `${input.continued?.status === "AVAILABLE" ? "Apart from the previous version above, none" : "None"} of this includes content. Read a material with read_material(publicationId, version); each version is a judgement formed at its as-of time, not a fact of today — say so when you use it.`,
  );
  if (input.workspaceTitle !== null) {
    lines.push(`You may propose an updated checkpoint with propose_checkpoint; it is checked against revision ${input.revisionSeen}.`);
  }
  lines.push("</workspace-context>");
  return lines.join("\n");
}

function workspaceLines({ run, unreadable, workspaceTitle }: ContextParts): string[] {
  if (workspaceTitle !== null) {
    const goal = run.goalStatement ? [`Goal (version ${run.goalVersionNo}, frozen when the run was admitted): ${run.goalStatement}`] : [];
    return [`This run works in the research workspace "${workspaceTitle}".`, ...goal];
  }
  if (unreadable) return [UNREADABLE_WORKSPACE_CONTEXT];
  if (run.workspaceId) return ["The workspace this run was admitted in is no longer available; its catalog and checkpoint cannot be shown."];
  return [];
}

function checkpointLines({ checkpoint, workspaceTitle, revisionSeen }: ContextParts): string[] {
  if (checkpoint === null) return workspaceTitle !== null ? [`Checkpoint: none yet (revision ${revisionSeen}).`] : [];
  if (checkpoint.status === "UNAVAILABLE") {
    return [`Checkpoint revision ${checkpoint.checkpoint.revision} is UNAVAILABLE: ${checkpoint.reason}. Do not rely on its earlier judgement.`];
  }
  const c = checkpoint.checkpoint;
  const origin = c.origin === "MODEL_SUGGESTION" ? "last changed by a model's suggestion, accepted" : "last changed by the user";
  // Each section says who wrote it: a revision the user made may keep a model's summary, which
  // is still a suggestion and must not read as the user's decision.
  const sections = sectionsOf(c);
  const by = (p: SectionProvenance | null | undefined) => (!p ? "" : p.author.kind === "OWNER" ? " [the user's decision]" : " [a model's suggestion]");
  const lines = [`Checkpoint revision ${c.revision} (${origin}, ${day(c.createdAt)}):`];
  if (c.summary) lines.push(`Summary: ${c.summary}${by(sections.summary)}`);
  for (const q of questionsOf(c)) lines.push(`- question ${q.id} [${q.status}]${by(sections.questions[q.id])}: ${q.text}`);
  for (const step of nextStepsOf(c.nextSteps) ?? []) lines.push(`- next step${by(sections.nextSteps)}: ${step}`);
  return lines;
}

function selectionLines(selected: SelectedMaterial[]): string[] {
  if (selected.length === 0) return [];
  const lines = ["", "Materials selected for this run when it was admitted (exact versions):"];
  for (const m of selected) {
    const newer = m.latestVersion > m.version ? `; a newer version ${m.latestVersion} exists but was not selected` : "";
    lines.push(`- "${m.title}" publicationId=${encodeGlobalId("Publication", m.publicationId)} version ${m.version}, as of ${day(m.asOf)}${newer}`);
  }
  return lines;
}

function catalogLines(catalog: HistoryCatalog): string[] {
  const lines = [
    "",
    catalog.complete
      ? `History catalog (complete, ${catalog.entries.length} publications):`
      : catalog.hasNextPage
        ? `History catalog (INCOMPLETE: the ${catalog.entries.length} newest publications; more follow, see below):`
        : `History catalog (INCOMPLETE: all ${catalog.entries.length} publications, some without their older versions):`,
  ];
  if (catalog.entries.length === 0) lines.push("- (no earlier materials are linked to this workspace)");
  lines.push(...catalog.entries.map(catalogEntryLine), ...catalogGaps(catalog));
  if (!catalog.hasNextPage && catalog.entries.length > 0) lines.push("To find a material by words of its title or content, use search_history.");
  return lines;
}
