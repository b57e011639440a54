// Owner scoping: the one place that says which rows a caller may read. Every resolver that reads
// an object a principal owns filters by one of these, so auditing cross-tenant reads is reading
// this file and finding its callers (`ctx.actor.principalId` appears nowhere else in ./types but
// the trace types, which use the same rule, and calls that pass the principal to a service).
//
// Filters, not @pothos/plugin-scope-auth: scope-auth checks a field or type once its parent is
// loaded, and refuses with an error. Dossier's isolation is part of the read itself: another
// principal's object is never loaded, node(id) answers null and lists leave it out, exactly as
// for an id that does not exist. A filter keeps that one statement and that answer.
import { readableRunsWhere, readableWorkspaceIds } from "../../domain/principal/access-scope.js";
import { keysWithin } from "../../domain/principal/principal-service.js";
import type { GraphQLContext } from "../context.js";

type Caller = Pick<GraphQLContext, "actor">;

/** The caller's own objects: conversations, runs, publications, artifacts, MCP servers, skills. */
export const mine = (ctx: Caller) => ({ ownerId: ctx.actor.principalId });

/** The caller's workspaces that are not deleted (a deleted workspace reads as absent); an access token's readable ones only. */
export const myLiveWorkspace = (ctx: Caller) => ({
  ownerId: ctx.actor.principalId,
  deletedAt: null,
  // AND, not `id`: callers spread this next to the id they look up.
  ...(ctx.actor.access ? { AND: [{ id: { in: readableWorkspaceIds(ctx.actor.access) } }] } : {}),
});

/** Whether a workspace row already read is one `myLiveWorkspace` finds: the caller's, not deleted, an access token's readable one. */
export const isMyLiveWorkspace = (ctx: Caller, workspace: { id: string; ownerId: string; deletedAt: Date | null }) =>
  workspace.ownerId === ctx.actor.principalId &&
  workspace.deletedAt === null &&
  (!ctx.actor.access || readableWorkspaceIds(ctx.actor.access).includes(workspace.id));

/** The caller's runs as lists show them: an access token's readable ones only. */
export const myRuns = (ctx: Caller) => ({ ...mine(ctx), ...(ctx.actor.access ? { AND: [readableRunsWhere(ctx.actor.access)] } : {}) });

/** The caller's conversations as lists show them: an access token's granted ones only. */
export const myConversations = (ctx: Caller) => ({
  ...mine(ctx),
  ...(ctx.actor.access ? { AND: [{ id: { in: ctx.actor.access.grants.filter((g) => g.kind === "Conversation").map((g) => g.id) } }] } : {}),
});

/** Rows of one of the caller's live workspaces (links, checkpoints, events). */
export const inMyWorkspace = (ctx: Caller) => ({ workspace: myLiveWorkspace(ctx) });

/** Rows of one of the caller's runs (ledger entries, evidence). */
export const ofMyRun = (ctx: Caller) => ({ run: mine(ctx) });

/** Rows of one of the caller's publications (versions). */
export const ofMyPublication = (ctx: Caller) => ({ publication: mine(ctx) });

/** Rows of one of the caller's conversations (messages). */
export const ofMyConversation = (ctx: Caller) => ({ conversation: mine(ctx) });

/** The caller's own principal row. */
export const me = (ctx: Caller) => ({ id: ctx.actor.principalId });

/** The caller's API keys; for a key, only those within its scopes (domain/principal/principal-service.ts). */
export const myKeys = (ctx: Caller) => keysWithin(ctx.actor);

/** Whether `principalId` is the caller. */
export const isCaller = (ctx: Caller, principalId: string) => principalId === ctx.actor.principalId;

/** For prismaNode's findUnique: the object with that id, if the caller owns it. */
export const ownedBy = (id: string, ctx: Caller) => ({ id, ...mine(ctx) });

/** Newest first, with a stable tiebreak for cursors. */
export const newestFirst = [{ createdAt: "desc" as const }, { id: "desc" as const }];
