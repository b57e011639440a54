// What research needs of workspaces when a run publishes: the link of its result into the run's
// workspace, in the publishing transaction. Workspaces implement it (workspace/link-service.ts);
// research names only this port, so the two folders do not depend on each other both ways.
import type { LinkTargetKind, Prisma } from "../../generated/prisma/client.js";
import type { AfterCommit } from "../after-commit.js";

/** What a link names: the kind of object and its id. */
export type LinkTarget = { kind: LinkTargetKind; targetId: string };

/** What happened to a link asked for on behalf of a run. */
export type RunLinkOutcome = "LINKED" | "NOT_LINKED_WORKSPACE_ARCHIVED" | "NOT_LINKED_WORKSPACE_DELETED" | "NO_WORKSPACE";

export interface RunLinks {
  /** Links `target` into the run's workspace while it is open, in the caller's transaction. */
  linkForRunIn(tx: Prisma.TransactionClient, runId: string, target: LinkTarget, after: AfterCommit): Promise<RunLinkOutcome>;
}
