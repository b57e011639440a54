// What an access token lets its holder do: operations on a few resources of its principal (a
// workspace and everything linked to it, a conversation, or a run), until it expires. An actor
// without a scope is a whole principal (an API key, the development principal, a sign-in).

export const ACCESS_OPERATIONS = ["READ", "SUBSCRIBE", "ADMIT", "DECIDE", "CANCEL", "SCORE"] as const;
export type AccessOperation = (typeof ACCESS_OPERATIONS)[number];

/** The kinds of resource a grant may name. */
export type GrantedKind = "Workspace" | "Conversation" | "Run";

export type AccessGrant = { kind: GrantedKind; id: string; operations: readonly AccessOperation[] };

export type AccessScope = {
  /** The token's own id (`jti`), for logs. */
  tokenId: string;
  expiresAt: Date;
  grants: readonly AccessGrant[];
  /** The end user of the team's product the token is for, as its minting backend named it (createAccessToken's endUser). */
  endUser?: string;
};

/** Where a run or conversation lies, as grants cover it. */
export type Placement = { workspaceId?: string | null; conversationId?: string | null; runId?: string | null };

/** Whether the scope grants `operation` on a resource of this kind and id, directly or through what contains it. */
export function grants(scope: AccessScope, operation: AccessOperation, kind: GrantedKind, id: string, placement: Placement = {}): boolean {
  const held = (k: GrantedKind, i: string | null | undefined) =>
    i != null && scope.grants.some((grant) => grant.kind === k && grant.id === i && grant.operations.includes(operation));
  if (held(kind, id)) return true;
  if (kind === "Run") return held("Workspace", placement.workspaceId) || held("Conversation", placement.conversationId);
  return false;
}

/** The workspaces the scope may read (lists of workspaces show only these). */
export const readableWorkspaceIds = (scope: AccessScope): string[] =>
  scope.grants.filter((grant) => grant.kind === "Workspace" && grant.operations.includes("READ")).map((grant) => grant.id);

/** The runs' filter for lists: those in a readable workspace or conversation, or granted one by one. */
export function readableRunsWhere(scope: AccessScope): { OR: object[] } {
  const ids = (kind: GrantedKind) => scope.grants.filter((g) => g.kind === kind && g.operations.includes("READ")).map((g) => g.id);
  return { OR: [{ workspaceId: { in: ids("Workspace") } }, { conversationId: { in: ids("Conversation") } }, { id: { in: ids("Run") } }] };
}
