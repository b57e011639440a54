// The run's access to earlier research (W7, W8, W11): `read_material` reads one exact
// version through the publication module's checks, with the run's own principal (and, for a
// run an access token admitted, only within what that token could read), and
// `propose_checkpoint` records a checkpoint proposal to be decided when the run settles (never
// for a run whose admitting token may not READ its workspace: unreadable-workspace.ts).
// Neither ever fails the run: an unavailable material or a bad proposal is something the
// model is told about and can work around.
import { z } from "zod";
import { idOfType } from "../../domain/global-id.js";
import { type MaterialLedger, type ReadRange, rangeColumns, readRange } from "../../domain/research/material-ledger.js";
import type { VersionRef } from "../../domain/research/owned-objects.js";
import { type MaterialRead, missingVersion, type PublicationService, type ReadableVersion } from "../../domain/research/publication-service.js";
import { humanScoresText } from "../../domain/research/score-provenance.js";
import type { ScoreService } from "../../domain/research/score-service.js";
import { type CheckpointProposals, checkpointProposal, materialRef } from "../../domain/workspace/checkpoint-proposals.js";
import type { HistoryService } from "../../domain/workspace/history-service.js";
import { reachOfRun } from "../../domain/workspace/material-reach.js";
import { describeUnstorable, findInvalidText, isStorableText } from "../../domain/text/unstorable-text.js";
import type { ToolSchema } from "../ports/model.js";
import { type Tool, ToolError, type ToolRun } from "../ports/tool.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";
import { readForRunReach } from "./reach-wording.js";
import { unreadableWorkspace, workspaceUnreadable } from "./unreadable-workspace.js";

/** A read returns at most this many characters unless the model asks for more (small windows). */
export const MATERIAL_PAGE_CHARS = 16_000;
/** The one tool that records READ entries in the material ledger. */
export const READ_MATERIAL_TOOL = "read_material";
export const MATERIAL_PAGE_CHARS_MAX = 200_000;

const materialRead = materialRef.extend({
  offset: z.number().int().min(0).default(0),
  maxChars: z.number().int().min(1_000).max(MATERIAL_PAGE_CHARS_MAX).default(MATERIAL_PAGE_CHARS),
});

function publicationIdOf(globalId: string): string {
  const id = isStorableText(globalId) ? idOfType(globalId, "Publication") : null;
  if (!id) throw new ToolError(`"${globalId}" is not a publication id; use a publicationId exactly as the workspace context lists it.`);
  return id;
}

function issuesOf(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join(".") || "arguments"}: ${issue.message}`).join("; ");
}

const READ_MATERIAL_SCHEMA: ToolSchema = {
  name: READ_MATERIAL_TOOL,
  description: `Read exactly one version of an earlier publication (a material from the workspace context). Returns that version's content with its as-of time, or UNAVAILABLE with the reason. Long contents come in parts of maxChars characters (default ${groupedDigits(MATERIAL_PAGE_CHARS)}); the reply says where the next part starts.`,
  parameters: {
    type: "object",
    properties: {
      publicationId: { type: "string", description: "The publicationId as listed in the workspace context." },
      version: { type: "integer", minimum: 1, description: "The exact version to read." },
      offset: { type: "integer", minimum: 0, description: "The character to start at (default 0)." },
      maxChars: { type: "integer", minimum: 1000, maximum: MATERIAL_PAGE_CHARS_MAX, description: "The most characters to return." },
    },
    required: ["publicationId", "version"],
  },
};

type ReadMaterialDeps = {
  publications: Pick<PublicationService, "readVersion">;
  /** Which publications a run an access token admitted may read (the token's readable histories). */
  history: Pick<HistoryService, "withinReach">;
  ledger: Pick<MaterialLedger, "record">;
  scores?: Pick<ScoreService, "humanScores">;
};

/**
 * The version as the run's principal reads it; outside the admitting token's reach, as a version
 * that does not exist, and unavailable because of a version outside it, without naming that one.
 * The reach is asked once: of the version's publication and of the one that broke it together.
 */
async function readForRun(deps: ReadMaterialDeps, run: ToolRun, ref: VersionRef): Promise<MaterialRead> {
  const read = await deps.publications.readVersion({ principalId: run.ownerId }, ref);
  const reach = reachOfRun(run);
  if (!reach) return read;
  const culprit = read.status === "UNAVAILABLE" ? read.unnamed?.publicationId : undefined;
  const within = await deps.history.withinReach(run.ownerId, reach, culprit ? [ref.publicationId, culprit] : [ref.publicationId]);
  if (!within.has(ref.publicationId)) return missingVersion(ref.version);
  return readForRunReach(within, read);
}

export function createReadMaterialTool(deps: ReadMaterialDeps): Tool {
  return {
    schema: READ_MATERIAL_SCHEMA,
    async execute(args, { run, toolCallId, write }) {
      const parsed = materialRead.safeParse(args);
      if (!parsed.success) throw new ToolError(`Invalid arguments: ${issuesOf(parsed.error)}.`);
      const ref = { publicationId: publicationIdOf(parsed.data.publicationId), version: parsed.data.version };
      const read = await readForRun(deps, run, ref);
      const base = { runId: run.id, publicationId: ref.publicationId, version: ref.version, toolCallId, publicationVersionId: read.version?.id ?? null };
      const selected = { ...base, stage: "SELECTED" as const };
      if (read.status === "UNAVAILABLE") {
        const unavailable = {
          ...base,
          stage: "UNAVAILABLE" as const,
          reason: read.reason,
          culpritPublicationId: read.unnamed?.publicationId ?? null,
          unnamedReason: read.unnamed?.reason ?? null,
        };
        await write((tx) => deps.ledger.record(tx, [selected, unavailable]));
        return `UNAVAILABLE: version ${ref.version} of ${parsed.data.publicationId} cannot be used: ${read.reason}. Continue with other evidence and state this gap in your answer.`;
      }
      const v = read.version;
      const { offset, maxChars } = parsed.data;
      const range = readRange(v.content, offset, maxChars);
      if (!range) {
        // Asked for, but nothing was read: no READ entry.
        await write((tx) => deps.ledger.record(tx, [selected]));
        throw new ToolError(`offset ${offset} is past the end: version ${v.version} has ${v.content.length} characters.`);
      }
      // READ names exactly the characters returned, so a part is never taken for the whole version.
      await write((tx) => deps.ledger.record(tx, [selected, { ...base, stage: "READ", ...rangeColumns(range) }]));
      const scores = humanScoresText((await deps.scores?.humanScores(run.ownerId, [v.id]))?.get(v.id));
      return materialText(v, parsed.data.publicationId, range, scores);
    },
  };
}

/** A part of a version as the model is shown it: what it is, as of when, and where the rest starts. */
function materialText(v: ReadableVersion, publicationId: string, range: ReadRange, scores: string | null): string {
  const newer = v.publication.latestVersion > v.version ? ` (version ${v.publication.latestVersion} is newer; this is version ${v.version} as asked)` : "";
  const { start, end } = range;
  const part =
    range.coverage === "WHOLE"
      ? []
      : [
          `This part holds characters ${start}–${end} of ${v.content.length}.` +
            (end < v.content.length ? ` Call read_material again with offset=${end} for the rest.` : " It is the last part."),
        ];
  return [
    `<material title="${v.publication.title}" publicationId="${publicationId}" version="${v.version}" as-of="${v.asOf.toISOString()}" sha256="${v.contentHash}">`,
    `This is a judgement formed as of ${v.asOf.toISOString()}${newer}.`,
    // What people said of this exact version: a judgement of the judgement.
    ...(scores ? [`People judged this version: ${scores}.`] : []),
    ...part,
    range.text,
    "</material>",
  ].join("\n");
}

const MAX_PROPOSALS_PER_RUN = 20;

const PROPOSE_CHECKPOINT_SCHEMA: ToolSchema = {
  name: "propose_checkpoint",
  description:
    "Propose an update of the workspace checkpoint (research progress): a summary, questions to add (no id) or to change by id (text and/or status OPEN|RESOLVED), next steps, and the materials you read that support it. Questions you do not mention stay as they are. It is applied when this run finishes successfully, only if nobody changed the checkpoint since this run started; it is a suggestion, never a fact.",
  parameters: {
    type: "object",
    properties: {
      summary: { type: "string" },
      nextSteps: { type: "array", items: { type: "string" } },
      questions: {
        type: "array",
        items: {
          type: "object",
          properties: { id: { type: "string" }, text: { type: "string" }, status: { type: "string", enum: ["OPEN", "RESOLVED"] } },
        },
      },
      citedMaterials: {
        type: "array",
        items: {
          type: "object",
          properties: { publicationId: { type: "string" }, version: { type: "integer" } },
          required: ["publicationId", "version"],
        },
      },
    },
  },
};

/** What propose_checkpoint works through: the run's proposals, and the ledger of what it read. */
export type ProposeCheckpointDeps = {
  proposals: Pick<CheckpointProposals, "count" | "record">;
  ledger: Pick<MaterialLedger, "reads">;
};

export function createProposeCheckpointTool(deps: ProposeCheckpointDeps): Tool {
  return {
    schema: PROPOSE_CHECKPOINT_SCHEMA,
    async execute(args, { run, write }) {
      const workspaceId = run.workspaceId;
      if (!workspaceId) throw new ToolError("This run has no workspace, so it has no checkpoint to propose.");
      // Before anything is read or recorded: the answer says nothing of the checkpoint, not even its revision.
      if (workspaceUnreadable(run)) throw new ToolError(unreadableWorkspace("it cannot propose a checkpoint: a proposal needs READ on the workspace"));
      const expectedRevision = run.checkpointRevisionSeen ?? 0;
      // Only the last proposal counts; a run that keeps proposing is told to stop, not stored.
      if ((await deps.proposals.count(run.id)) >= MAX_PROPOSALS_PER_RUN) {
        throw new ToolError(`This run has already made ${MAX_PROPOSALS_PER_RUN} proposals; the last one is the one that counts.`);
      }
      // An invalid proposal is kept as the model made it, NUL characters included.
      const record = (status: "PENDING" | "INVALID", reason: string | null, payload: unknown) =>
        write((tx) => deps.proposals.record(tx, { runId: run.id, workspaceId, expectedRevision, status, reason, payload }));
      const unstorable = findInvalidText(args, "arguments");
      const parsed = checkpointProposal.safeParse(args);
      if (unstorable || !parsed.success) {
        const reason = unstorable
          ? `${unstorable.field} ${describeUnstorable(unstorable.problem)}; a checkpoint holds plain text only`
          : issuesOf(parsed.error!);
        await record("INVALID", reason, args ?? {});
        throw new ToolError(`The proposal was recorded as invalid and will not be applied: ${reason}.`);
      }
      const cited = parsed.data.citedMaterials.map((m) => ({ publicationId: idOfType(m.publicationId, "Publication"), version: m.version }));
      const read = await deps.ledger.reads(run.id);
      const unread = parsed.data.citedMaterials.filter((m, i) => !read.some((r) => r.publicationId === cited[i]!.publicationId && r.version === m.version));
      if (unread.length > 0) {
        const reason = `it cites materials this run has not read: ${unread.map((m) => `${m.publicationId} version ${m.version}`).join(", ")}`;
        await record("INVALID", reason, parsed.data);
        throw new ToolError(`The proposal was recorded as invalid and will not be applied: ${reason}.`);
      }
      await record("PENDING", null, { ...parsed.data, citedMaterials: cited });
      return `Proposal recorded. It will be applied when this run finishes successfully, if the checkpoint is still at revision ${expectedRevision}.`;
    },
  };
}
