// Which publications a workspace's history reaches for one principal (W6): the principal's own
// publications that the workspace links, that a linked run published a version of, or that a
// run in a linked conversation published a version of. The catalog lists them and the search
// looks inside them, so both say the same thing about what the workspace can draw on.
import { Prisma } from "../../generated/prisma/client.js";

/**
 * The condition on `publication p` that it is in the workspace's history for the principal,
 * evaluated in SQL: the links are joined, never read, however many there are.
 */
export function inWorkspaceHistory(workspaceId: string, principalId: string): Prisma.Sql {
  return Prisma.sql`p.owner_id = ${principalId}
       AND (EXISTS (SELECT 1 FROM workspace_link l
                     WHERE l.workspace_id = ${workspaceId} AND l.target_kind = 'PUBLICATION' AND l.target_id = p.id)
         OR EXISTS (SELECT 1 FROM publication_version v
                      JOIN workspace_link l ON l.workspace_id = ${workspaceId} AND l.target_kind = 'RUN' AND l.target_id = v.origin_run_id
                     WHERE v.publication_id = p.id)
         OR EXISTS (SELECT 1 FROM publication_version v
                      JOIN run r ON r.id = v.origin_run_id AND r.owner_id = ${principalId}
                      JOIN workspace_link l ON l.workspace_id = ${workspaceId} AND l.target_kind = 'CONVERSATION' AND l.target_id = r.conversation_id
                     WHERE v.publication_id = p.id))`;
}
