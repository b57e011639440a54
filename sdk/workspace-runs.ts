// A workspace's runs, newest first, for a run list beside a chat. The one place the client kit
// reads the runs list: it pages through the principal's runs (Query.runs, newest first) and keeps
// those admitted in the workspace.
import type { DossierClient } from "./client.js";
import { type RunFieldsFragment, RunsDocument } from "./generated/graphql.js";

export type WorkspaceRun = RunFieldsFragment;

/** The runs list is read this many at a time. */
const PAGE = 50;
/** How many of the principal's runs are looked through at most. */
const LOOKED_THROUGH = 1_000;

/** The newest `first` runs (default 20) admitted in the workspace. */
export async function readWorkspaceRuns(client: DossierClient, workspaceId: string, { first = 20 }: { first?: number } = {}): Promise<WorkspaceRun[]> {
  const found: WorkspaceRun[] = [];
  let after: string | undefined;
  for (let seen = 0; seen < LOOKED_THROUGH && found.length < first; seen += PAGE) {
    const { runs } = await client.request(RunsDocument, { first: PAGE, ...(after ? { after } : {}) });
    for (const { node } of runs.edges) if (node.workspace?.id === workspaceId && found.length < first) found.push(node);
    if (!runs.pageInfo.hasNextPage || !runs.pageInfo.endCursor) break;
    after = runs.pageInfo.endCursor;
  }
  return found;
}
