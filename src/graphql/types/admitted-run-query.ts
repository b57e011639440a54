// What an admitRun answer reads of its run's relations, and the run it answers with. The query is
// the one Pothos plans for the answer's `run` (queryFromInfo), which also tells the run's fields
// that the run carries it. A plain admission gives back the relations the SDK's AdmitRun selects
// (conversation, principal, goal version, materials — their own columns; each material's version is
// read by its field, as when the run is read) from its one statement
// (domain/runs/admitted-run-relations.ts); a run without them — a replay, an admission naming a
// conversation, a selection asking for more — is read again once with the whole query. The
// workspace is not a relation of the run: its field reads it on its own (Run.workspace), unless
// the admission gave it back — asked for only when the selection reads it and the run is not read again.
import { queryFromInfo } from "@pothos/plugin-prisma";
import type { GraphQLResolveInfo } from "graphql";
import { RUN_MATERIALS_MAX } from "../../domain/runs/admission-request.js";
import type { AdmittedRelations, AdmittedRun } from "../../domain/runs/admitted-run-relations.js";
import type { Run, Workspace } from "../../generated/prisma/client.js";
import type { GraphQLContext } from "../context.js";
import { selectsPath } from "../selected-fields.js";

type Include = Record<string, unknown>;
type RunQuery = { include?: Include; select?: Include };
type Nested = { [relation: string]: Nested };

const noArguments = (args: Include) => Object.keys(args).length === 0;

/** The materials in position order, all of them: what the admission gives back. */
const allMaterialsInOrder = ({ orderBy, take, ...rest }: Include) =>
  noArguments(rest) &&
  (orderBy === undefined || JSON.stringify(orderBy) === JSON.stringify({ position: "asc" })) &&
  (take === undefined || (typeof take === "number" && take >= RUN_MATERIALS_MAX));

/** Whether a relation's include asks for no more than every column of it and of the relations in `nested`. */
function within(value: unknown, nested: Nested, args: (args: Include) => boolean = noArguments): boolean {
  if (value === true) return true;
  if (!value || typeof value !== "object") return false;
  const { include, ...rest } = value as Include;
  if (!args(rest)) return false;
  if (include === undefined) return true;
  if (!include || typeof include !== "object") return false;
  return Object.entries(include as Include).every(([name, sub]) => name in nested && within(sub, nested[name]!));
}

type GivenRelation = Exclude<keyof AdmittedRelations, "liveWorkspace">;

/** Each relation the admission can give back, and whether a relation's include asks for no more than it gives. */
const GIVEN: Record<GivenRelation, (value: unknown) => boolean> = {
  conversation: (value) => within(value, {}),
  owner: (value) => within(value, {}),
  goalVersion: (value) => within(value, {}),
  materials: (value) => within(value, { publicationVersion: { publication: {} } }, allMaterialsInOrder),
};

export type AdmittedRunQuery = {
  query: RunQuery;
  /** The relations to ask the admission for: none when the run is read again anyway; the workspace when the selection reads it. */
  relations: AdmittedRelations;
  /** Whether those are all the query reads beyond the run's columns. */
  complete: boolean;
};

/** The query for the answer's run, planned for the selection `info` resolves. */
export async function admittedRunQuery(ctx: GraphQLContext, info: GraphQLResolveInfo): Promise<AdmittedRunQuery> {
  const query: RunQuery = await queryFromInfo({ context: ctx, info, typeName: "Run", path: ["run"], awaitSelections: true });
  const relations: AdmittedRelations = selectsPath(info, ["run", "workspace"]) ? { liveWorkspace: true } : {};
  let complete = !query.select;
  for (const [name, value] of Object.entries(query.include ?? {})) {
    const given = GIVEN[name as GivenRelation];
    if (given?.(value)) relations[name as GivenRelation] = true;
    else complete = false;
  }
  return { query, relations: complete ? relations : {}, complete };
}

/** The run to answer with: as admitted when it carries everything the query reads, else read once with the query. */
export async function answeredRun(ctx: GraphQLContext, planned: AdmittedRunQuery, run: Run): Promise<Run> {
  // The workspace is not one of them: a run admitted outside any has none to give back.
  const carried = planned.complete && Object.keys(planned.relations).every((name) => name === "liveWorkspace" || (run as Include)[name] !== undefined);
  return carried ? run : ctx.prisma.run.findUniqueOrThrow({ where: { id: run.id }, ...planned.query });
}

/**
 * The workspace an admission gave back on its run (open and the caller's when it was admitted),
 * when `query` — Run.workspace's — reads nothing beyond the workspace's columns.
 */
export function admittedWorkspace(run: Run, query: { select?: unknown; include?: object }): Workspace | undefined {
  const found = (run as AdmittedRun).liveWorkspace;
  const plain = !query.select && Object.keys(query.include ?? {}).length === 0 && Object.keys(query).every((key) => key === "include");
  return found && plain ? found : undefined;
}
