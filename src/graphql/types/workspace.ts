// Workspace and GoalVersion nodes with their queries, mutations and subscription.
import { paged } from "../list-connection.js";
import { GraphQLError } from "graphql";
import { NotFoundError, StaleVersionError, ValidationError } from "../../domain/errors.js";
import type { GoalVersion, Workspace } from "../../generated/prisma/client.js";
import { WorkspaceStatus } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { largeText } from "../large-text.js";
import { GOAL_STATEMENT_MAX } from "../../domain/workspace/workspace-service.js";
import { boundedCount, countFields } from "../counted-connection.js";
import { visibleWorkspace } from "../../domain/workspace/workspace-access.js";
import { encodeGlobalId, idOfType, requireIdOfType } from "../global-id.js";
import { LinkKindEnum, typenameOfKind } from "./link-kind.js";
import { type WorkspaceEventUpdate, workspaceEventStream } from "./workspace-event-stream.js";
import { inMyWorkspace, mine, myLiveWorkspace, newestFirst } from "./owned.js";
import { keepPage, pageBelowWorkspace } from "./link-page-plan.js";
import { readWorkspaceWithPage } from "../../domain/workspace/workspace-read.js";

/**
 * Whether Pothos asks for the workspace's columns and at most its current goal (the `goal`
 * field's selection), which domain/workspace/workspace-read.ts reads as Prisma would.
 */
function readTogether(query: object): boolean {
  const keys = Object.keys(query);
  if (keys.length === 0) return true;
  if (keys.length !== 1 || keys[0] !== "include") return false;
  const include = (query as { include: Record<string, unknown> }).include;
  const names = Object.keys(include);
  if (names.length !== 1 || names[0] !== "goalVersions") return false;
  const goal = include.goalVersions as Record<string, unknown>;
  return (
    Object.keys(goal).length === 2 &&
    goal.take === 1 &&
    typeof goal.orderBy === "object" &&
    goal.orderBy !== null &&
    JSON.stringify(goal.orderBy) === '{"version":"desc"}'
  );
}

const WorkspaceStatusEnum = builder.enumType(WorkspaceStatus, {
  name: "WorkspaceStatus",
  description: "ARCHIVED workspaces take no new links or admissions; restoring makes them ACTIVE again.",
});

export const GoalVersionNode = builder.prismaNode("GoalVersion", {
  id: { field: "id" },
  // node(id) of an id that names nothing (or nothing of yours) is null, not an error.
  nullable: true,
  findUnique: (id, ctx) => ({ id, ...inMyWorkspace(ctx) }),
  description: "One immutable version of a workspace's research goal.",
  fields: (t) => ({
    version: t.exposeInt("version", { description: "1 for the first goal; each accepted update adds one." }),
    statement: t.exposeString("statement", { extensions: largeText(GOAL_STATEMENT_MAX) }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
  }),
});

export const WorkspaceNode = builder.prismaNode("Workspace", {
  id: { field: "id" },
  // node(id) of an id that names nothing (or nothing of yours) is null, not an error.
  nullable: true,
  findUnique: (id, ctx) => ({ id, ...myLiveWorkspace(ctx) }),
  description: "A long-term research goal and the organisation around it.",
  fields: (t) => ({
    title: t.exposeString("title"),
    status: t.expose("status", { type: WorkspaceStatusEnum }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    archivedAt: t.expose("archivedAt", { type: "DateTime", nullable: true }),
    goal: t.field({
      type: GoalVersionNode,
      description: "The current goal version.",
      // Read in the workspace's own statement (a lateral join, LIMIT 1): versions are only ever
      // added, so the newest is the one the workspace row names.
      select: (_args, _ctx, nestedSelection) => ({ goalVersions: nestedSelection({ orderBy: { version: "desc" }, take: 1 }) }),
      resolve: (workspace) => workspace.goalVersions[0]!,
    }),
    goalVersions: t.prismaConnection(
      {
        type: "GoalVersion",
        description: "Every goal version, newest first.",
        cursor: "id",
        ...paged({ defaultSize: 20, maxSize: 100 }),
        resolve: (query, workspace, _args, ctx) =>
          ctx.prisma.goalVersion.findMany({ ...query, where: { workspaceId: workspace.id }, orderBy: { version: "desc" } }),
      },
      {
        name: "GoalVersionConnection",
        fields: countFields<{ id: string }>((workspace, ctx) => boundedCount(ctx.prisma.goalVersion, { workspaceId: workspace.id })),
      },
      { name: "GoalVersionEdge" },
    ),
  }),
});

builder.queryFields((t) => ({
  workspace: t.prismaField({
    type: "Workspace",
    nullable: true,
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, ctx, info) => {
      const id = idOfType(String(args.id), "Workspace");
      if (!id) return null;
      // The typical read (the workspace's columns, its goal, a page of links) in one statement.
      if (readTogether(query)) {
        const planned = pageBelowWorkspace(info);
        const read = await readWorkspaceWithPage(ctx.prisma, ctx.actor.principalId, id, "include" in query, planned);
        if (read && planned && read.links) keepPage(read.workspace, planned.key, read.links);
        return read?.workspace ?? null;
      }
      return ctx.prisma.workspace.findFirst({ ...query, where: visibleWorkspace(ctx.actor, id) });
    },
  }),
  workspaces: t.prismaConnection(
    {
      type: "Workspace",
      description: "Workspaces, newest first.",
      cursor: "id",
      ...paged({ defaultSize: 20, maxSize: 100 }),
      resolve: (query, _root, _args, ctx) =>
        ctx.prisma.workspace.findMany({
          ...query,
          where: myLiveWorkspace(ctx),
          orderBy: newestFirst,
        }),
    },
    { name: "WorkspaceConnection", fields: countFields<unknown>((_root, ctx) => boundedCount(ctx.prisma.workspace, myLiveWorkspace(ctx))) },
    { name: "WorkspaceEdge" },
  ),
}));

const CreateWorkspaceInput = builder.inputType("CreateWorkspaceInput", {
  fields: (t) => ({
    title: t.string({ required: true, description: "Up to 200 characters." }),
    goal: t.string({ required: true, description: "The first goal statement; up to 20,000 characters." }),
  }),
});

const UpdateGoalInput = builder.inputType("UpdateGoalInput", {
  fields: (t) => ({
    workspaceId: t.id({ required: true }),
    statement: t.string({ required: true, description: "Up to 20,000 characters." }),
    expectedVersion: t.int({ required: true, description: "The version you are replacing: the current one." }),
  }),
});

const WorkspaceRefInput = builder.inputType("WorkspaceRefInput", {
  fields: (t) => ({ workspaceId: t.id({ required: true }) }),
});

const CreateWorkspaceSuccess = builder.objectRef<{ workspace: Workspace }>("CreateWorkspaceSuccess").implement({
  fields: (t) => ({ workspace: t.field({ type: WorkspaceNode, resolve: (result) => result.workspace }) }),
});

const UpdateGoalSuccess = builder.objectRef<{ workspace: Workspace; goal: GoalVersion }>("UpdateGoalSuccess").implement({
  fields: (t) => ({
    workspace: t.field({ type: WorkspaceNode, resolve: (result) => result.workspace }),
    goal: t.field({ type: GoalVersionNode, description: "The version just created.", resolve: (result) => result.goal }),
  }),
});

const ArchiveWorkspaceSuccess = builder.objectRef<{ workspace: Workspace }>("ArchiveWorkspaceSuccess").implement({
  fields: (t) => ({ workspace: t.field({ type: WorkspaceNode, resolve: (result) => result.workspace }) }),
});

const RestoreWorkspaceSuccess = builder.objectRef<{ workspace: Workspace }>("RestoreWorkspaceSuccess").implement({
  fields: (t) => ({ workspace: t.field({ type: WorkspaceNode, resolve: (result) => result.workspace }) }),
});

builder.mutationFields((t) => ({
  createWorkspace: t.field({
    type: CreateWorkspaceSuccess,
    args: { input: t.arg({ type: CreateWorkspaceInput, required: true }) },
    errors: { types: [ValidationError], directResult: true, union: { name: "CreateWorkspacePayload" } },
    resolve: async (_root, { input }, ctx) => ({
      workspace: await ctx.services.workspaces.createWorkspace(ctx.actor, input),
    }),
  }),
  updateGoal: t.field({
    type: UpdateGoalSuccess,
    description: "Creates goal version n+1 if expectedVersion is the current version n; otherwise StaleVersionError.",
    args: { input: t.arg({ type: UpdateGoalInput, required: true }) },
    errors: {
      types: [StaleVersionError, NotFoundError, ValidationError],
      directResult: true,
      union: { name: "UpdateGoalPayload" },
    },
    resolve: (_root, { input }, ctx) =>
      ctx.services.workspaces.updateGoal(ctx.actor, {
        ...input,
        workspaceId: requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId"),
      }),
  }),
  archiveWorkspace: t.field({
    type: ArchiveWorkspaceSuccess,
    description:
      "Stops new links and admissions, and the workspace's schedules' fires; cancels nothing. Reversible with restoreWorkspace, which gives each schedule its next fire after the restore (the fires that fell while archived are not caught up).",
    args: { input: t.arg({ type: WorkspaceRefInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "ArchiveWorkspacePayload" } },
    resolve: async (_root, { input }, ctx) => ({
      workspace: await ctx.services.workspaces.archiveWorkspace(ctx.actor, requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId")),
    }),
  }),
  restoreWorkspace: t.field({
    type: RestoreWorkspaceSuccess,
    args: { input: t.arg({ type: WorkspaceRefInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "RestoreWorkspacePayload" } },
    resolve: async (_root, { input }, ctx) => ({
      workspace: await ctx.services.workspaces.restoreWorkspace(ctx.actor, requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId")),
    }),
  }),
}));

const DeleteWorkspaceSuccess = builder.objectRef<{ deletedWorkspaceId: string }>("DeleteWorkspaceSuccess").implement({
  fields: (t) => ({ deletedWorkspaceId: t.exposeID("deletedWorkspaceId") }),
});

builder.mutationField("deleteWorkspace", (t) =>
  t.field({
    type: DeleteWorkspaceSuccess,
    description:
      "Removes the workspace's goal versions and links; its conversations, runs, publications and artifacts stay. " +
      "The workspace then reads as not found, and nothing can recreate it. " +
      "Needs a full key (every scope): an agent's key, or one with ADMIT alone, may archive a workspace (archiveWorkspace, undone by restoreWorkspace) but not delete it.",
    args: { input: t.arg({ type: WorkspaceRefInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "DeleteWorkspacePayload" } },
    resolve: async (_root, { input }, ctx) => {
      const id = requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId");
      await ctx.services.workspaces.deleteWorkspace(ctx.actor, id);
      return { deletedWorkspaceId: String(input.workspaceId) };
    },
  }),
);

const WorkspaceEventKindEnum = builder.enumType("WorkspaceEventKind", {
  values: {
    GOAL_UPDATED: { description: "A new goal version was created; `goal` is that version." },
    ARCHIVED: { description: "The workspace was archived." },
    RESTORED: { description: "The workspace was restored from the archive." },
    DELETED: { description: "The workspace was deleted; `workspace` is null from now on." },
    LINKED: { description: "An object was linked; see `linkKind` and `linkTargetId`." },
    UNLINKED: { description: "A link was removed; see `linkKind` and `linkTargetId`." },
    RUN_ADMITTED: { description: "A run was admitted in the workspace; `run` is that run." },
    CHECKPOINT_UPDATED: { description: "A new checkpoint revision was accepted; see `checkpointRevision`." },
    RESYNC_REQUIRED: {
      description:
        "You fell further behind than Dossier keeps for a subscriber (1,000 undelivered events): later events were not kept for you. Re-read the workspace, then subscribe again. The stream completes after it.",
    },
  } satisfies Record<WorkspaceEventUpdate["kind"], unknown>,
});

const WorkspaceEvent = builder.objectRef<WorkspaceEventUpdate>("WorkspaceEvent").implement({
  description: "A change to a workspace, delivered after it was committed.",
  fields: (t) => ({
    kind: t.field({ type: WorkspaceEventKindEnum, resolve: (event) => event.kind }),
    at: t.field({ type: "DateTime", resolve: (event) => event.at }),
    workspaceId: t.id({ resolve: (event) => encodeGlobalId("Workspace", event.workspaceId) }),
    workspace: t.prismaField({
      type: "Workspace",
      nullable: true,
      description: "The workspace as it is now; null once deleted.",
      resolve: (query, event, _args, ctx) => ctx.prisma.workspace.findFirst({ ...query, where: visibleWorkspace(ctx.actor, event.workspaceId) }),
    }),
    linkKind: t.field({
      type: LinkKindEnum,
      nullable: true,
      description: "For LINKED and UNLINKED: the kind of the linked object.",
      resolve: (event) => event.link?.kind ?? null,
    }),
    linkTargetId: t.id({
      nullable: true,
      description: "For LINKED and UNLINKED: the linked object's id.",
      resolve: (event) => (event.link ? encodeGlobalId(typenameOfKind[event.link.kind], event.link.targetId) : null),
    }),
    run: t.prismaField({
      type: "Run",
      nullable: true,
      description: "For RUN_ADMITTED: the admitted run.",
      resolve: (query, event, _args, ctx) => (event.runId ? ctx.prisma.run.findFirst({ ...query, where: { id: event.runId, ...mine(ctx) } }) : null),
    }),
    checkpointRevision: t.int({
      nullable: true,
      description: "For CHECKPOINT_UPDATED: the revision the update created.",
      resolve: (event) => event.checkpointRevision ?? null,
    }),
    goal: t.prismaField({
      type: "GoalVersion",
      nullable: true,
      description: "For GOAL_UPDATED: the goal version the update created.",
      resolve: (query, event, _args, ctx) =>
        event.goalVersion === null
          ? null
          : ctx.prisma.goalVersion.findUnique({
              ...query,
              where: { workspaceId_version: { workspaceId: event.workspaceId, version: event.goalVersion } },
            }),
    }),
  }),
});

builder.subscriptionFields((t) => ({
  workspaceEvents: t.field({
    type: WorkspaceEvent,
    description:
      "Goal changes, archive and restore of one workspace, as they are committed. Completes after RESYNC_REQUIRED when the subscriber falls too far behind (it stops reading while events keep coming), or when its server lost its link to the other instances for a while (Redis failing over): events may have been missed. Over graphql-ws, the response to one event is executed once for every subscription of the same credential with the same document and variables, and each of them receives it (README: Sharing fairly).",
    args: { workspaceId: t.arg.id({ required: true }) },
    subscribe: async (_root, args, ctx) => {
      const id = idOfType(String(args.workspaceId), "Workspace");
      const exists = id ? await ctx.prisma.workspace.count({ where: visibleWorkspace(ctx.actor, id) }) : 0;
      if (!id || exists === 0) {
        throw new GraphQLError("Workspace not found.", { extensions: { code: "NOT_FOUND" } });
      }
      return workspaceEventStream(ctx.events, id);
    },
    resolve: (event) => event,
  }),
}));
