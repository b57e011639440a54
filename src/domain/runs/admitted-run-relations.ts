// What an admission in one statement (admit-in-one-statement.ts) may give back beside the run:
// its conversation (written by the statement), its principal, its frozen goal version, its
// materials (their own columns: each material's publication version is read by its field, as when
// the run is read) and the workspace it was admitted in as the statement found it — open and the
// caller's (read by it), so that the answer's selection — the SDK's AdmitRun asks for all of them —
// costs no statement of its own beyond the materials' versions.
//
// Each relation comes back as typed columns of the statement's one row, under a short prefix per
// model ("c.title"); the materials as one JSON array of their columns, in order. Only what the
// caller asks for is joined.
import type { Conversation, GoalVersion, Prisma, Principal, Run, RunMaterial, Workspace } from "../../generated/prisma/client.js";

/** The relations an admission's answer needs, as the admission can give them: every column of each. */
export type AdmittedRelations = {
  conversation?: boolean;
  owner?: boolean;
  goalVersion?: boolean;
  /** In order, their own columns only. */
  materials?: boolean;
  /** The workspace the run is admitted in, as the admission found it: open and the caller's. */
  liveWorkspace?: boolean;
};

/** The run as admitted, with the relations asked for under the names of Prisma's Run model. */
export type AdmittedRun = Run & {
  conversation?: Conversation;
  owner?: Principal;
  goalVersion?: GoalVersion | null;
  materials?: RunMaterial[];
  /** Not a relation of the model: the workspace is not one (a run outlives it). */
  liveWorkspace?: Workspace;
};

/** A model's columns under its field names: a column added to the model and not here fails to compile. */
type Columns<Model> = { [Field in keyof Model]-?: string };

export const CONVERSATION_COLUMNS: Columns<Conversation> = {
  id: "id",
  ownerId: "owner_id",
  title: "title",
  messageCount: "message_count",
  activeRunId: "active_run_id",
  createdAt: "created_at",
  forkedFromConversationId: "forked_from_conversation_id",
  forkedAtSeq: "forked_at_seq",
  lineage: "lineage",
};

const PRINCIPAL_COLUMNS: Columns<Principal> = {
  id: "id",
  name: "name",
  signInSubject: "sign_in_subject",
  createdAt: "created_at",
  dailyCostLimit: "daily_cost_limit",
};

const GOAL_VERSION_COLUMNS: Columns<GoalVersion> = {
  id: "id",
  workspaceId: "workspace_id",
  version: "version",
  statement: "statement",
  createdAt: "created_at",
};

const WORKSPACE_COLUMNS: Columns<Workspace> = {
  id: "id",
  ownerId: "owner_id",
  title: "title",
  status: "status",
  goalVersion: "goal_version",
  createdAt: "created_at",
  updatedAt: "updated_at",
  archivedAt: "archived_at",
  deletedAt: "deleted_at",
  checkpointRevision: "checkpoint_revision",
  monthlyBudget: "monthly_budget",
};

/** `table`'s columns as `"<prefix>.<field>"`; `named` when the table already names them by field (a CTE's RETURNING). */
function prefixed(prefix: string, table: string, columns: Record<string, string>, named = false): string {
  return Object.entries(columns)
    .map(([field, column]) => `${table}."${named ? field : column}" AS "${prefix}.${field}"`)
    .join(", ");
}

/** A RETURNING list giving back the conversation under the field names of Prisma's model. */
export const CONVERSATION_RETURNING = Object.entries(CONVERSATION_COLUMNS)
  .map(([field, column]) => `"${column}" AS "${field}"`)
  .join(", ");

/** The workspace's columns for the statement's `ws` (the workspace it locks, as `w`), under the prefix its final SELECT reads. */
export const WORKSPACE_SELECT = prefixed("w", "w", WORKSPACE_COLUMNS);

/**
 * The columns and joins that add `wanted` to the statement's final SELECT over `run` (the run
 * inserted, or no row), `conversation` (the conversation inserted, by field names), `found`
 * (the materials: publication version id and position) and `ws` (the workspace, with
 * WORKSPACE_SELECT when `liveWorkspace` is wanted). One row, whatever is wanted.
 */
export function relationsSql(wanted: AdmittedRelations): { columns: string; joins: string } {
  const columns: string[] = [];
  const joins: string[] = [];
  if (wanted.conversation) {
    columns.push(prefixed("c", "ac", CONVERSATION_COLUMNS, true));
    joins.push(`LEFT JOIN conversation AS ac ON ac.id = run."conversationId"`);
  }
  if (wanted.owner) {
    columns.push(prefixed("o", "ao", PRINCIPAL_COLUMNS));
    joins.push(`LEFT JOIN principal AS ao ON ao.id = run."ownerId"`);
  }
  if (wanted.goalVersion) {
    columns.push(prefixed("g", "ag", GOAL_VERSION_COLUMNS));
    joins.push(`LEFT JOIN goal_version AS ag ON ag.id = run."goalVersionId"`);
  }
  if (wanted.liveWorkspace) {
    columns.push(
      Object.keys(WORKSPACE_COLUMNS)
        .map((field) => `aw."w.${field}"`)
        .join(", "),
    );
    joins.push(`LEFT JOIN ws AS aw ON aw.id = run."workspaceId"`);
  }
  if (wanted.materials) {
    // The rows run_material is given (`found`), as the table's own columns: no version's content.
    columns.push(
      `(SELECT coalesce(json_agg(json_build_object('publicationVersionId', am.id, 'position', am.position) ORDER BY am.position), '[]') FROM found AS am) AS "m.list"`,
    );
  }
  return { columns: columns.map((c) => `, ${c}`).join(""), joins: joins.join(" ") };
}

/** The fields of `row` under `prefix`, or null when the joined row was missing (its id null). */
function part<T>(row: Record<string, unknown>, prefix: string): T | null {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) if (key.startsWith(`${prefix}.`)) out[key.slice(prefix.length + 1)] = value;
  return out.id === null || out.id === undefined ? null : (out as T);
}

/** The run of the statement's row (`run` already split off it), with the relations `wanted`. */
export function withRelations(run: Run, first: Record<string, unknown> | undefined, wanted: AdmittedRelations): AdmittedRun {
  const admitted: AdmittedRun = { ...run };
  if (!first) return admitted;
  if (wanted.conversation) {
    const conversation = part<Conversation>(first, "c");
    if (conversation) admitted.conversation = conversation;
  }
  if (wanted.owner) {
    const owner = part<Principal>(first, "o");
    if (owner) admitted.owner = owner;
  }
  if (wanted.goalVersion) admitted.goalVersion = part<GoalVersion>(first, "g");
  if (wanted.liveWorkspace) {
    const workspace = part<Workspace>(first, "w");
    if (workspace) admitted.liveWorkspace = workspace;
  }
  if (wanted.materials) {
    const list = first["m.list"] as { publicationVersionId: string; position: number }[];
    admitted.materials = list.map(({ publicationVersionId, position }): RunMaterial => ({ runId: run.id, publicationVersionId, position }));
  }
  return admitted;
}

/** The same relations as Prisma reads them, for a run read rather than admitted (a replay). */
export function includeOf(wanted: AdmittedRelations): Prisma.RunInclude {
  return {
    ...(wanted.conversation && { conversation: true }),
    ...(wanted.owner && { owner: true }),
    ...(wanted.goalVersion && { goalVersion: true }),
    ...(wanted.materials && { materials: { orderBy: { position: "asc" } } }),
  };
}
