// A checkpoint proposal still pending for a run whose admitting access token may not READ its
// workspace (recorded before propose_checkpoint refused such runs) is never applied when the run
// settles, and its decision names nothing of the checkpoint: not the revision it moved to, as a
// STALE decision would. A run whose token may READ the workspace is decided as before.
import { describe, expect, it } from "vitest";
import type { CheckpointProposal } from "../../src/generated/prisma/client.js";
import { StaleRevisionError } from "../../src/domain/errors.js";
import type { Tx } from "../../src/domain/transaction.js";
import { decideProposalsStep } from "../../src/runtime/workspace/run-results.js";
import { testRun } from "../support/tool-context.js";

const WORKSPACE = "workspace-1";

function settleWith(reach: { tokenReadableWorkspaceIds: string[] }) {
  const decided: { id: string; status: string; reason: string | null; revision: number | null }[] = [];
  let applied = 0;
  const pending = (id: string): CheckpointProposal => ({
    id,
    runId: "run-1",
    workspaceId: WORKSPACE,
    expectedRevision: 0,
    proposal: { nextSteps: ["Ask supplier B"], citedMaterials: [] },
    status: "PENDING",
    reason: null,
    revision: null,
    createdAt: new Date(),
    decidedAt: null,
  });
  const step = decideProposalsStep({
    // The checkpoint moved on to revision 7 since the run saw revision 0.
    checkpoints: {
      applyIn: async () => {
        applied++;
        throw new StaleRevisionError(0, 7);
      },
    },
    proposals: {
      pending: async () => [pending("proposal-1"), pending("proposal-2")],
      decide: async (_tx, id, status, reason, revision = null) => void decided.push({ id, status, reason, revision }),
      provenanceOf: async () => ({ acceptedVersionIds: [], citedVersionIds: [], sourceVersionIds: [] }),
    },
  });
  const run = testRun({ workspaceId: WORKSPACE, admittedByToken: "token-1", ...reach });
  const settle = step({ tx: {} as Tx, run, outcome: { type: "final", answer: "done" }, status: "SUCCEEDED", at: new Date(), after: [] });
  return { settle, decided, applied: () => applied };
}

describe("deciding the checkpoint proposals of a run an access token admitted", () => {
  it("without READ on the workspace: none is applied, and no decision names the checkpoint's revision", async () => {
    const { settle, decided, applied } = settleWith({ tokenReadableWorkspaceIds: [] });
    await settle;
    expect(applied()).toBe(0);
    const reason = "the access token that admitted the run has no READ on its workspace";
    expect(decided).toEqual([
      { id: "proposal-1", status: "INVALID", reason, revision: null },
      { id: "proposal-2", status: "INVALID", reason, revision: null },
    ]);
  });

  it("with READ on the workspace: the last one is tried against the checkpoint as before", async () => {
    const { settle, decided, applied } = settleWith({ tokenReadableWorkspaceIds: [WORKSPACE] });
    await settle;
    expect(applied()).toBe(1);
    expect(decided).toEqual([
      { id: "proposal-1", status: "DROPPED", reason: "a later proposal of the same run replaced it", revision: null },
      { id: "proposal-2", status: "STALE", reason: "the checkpoint moved to revision 7 after the run saw revision 0", revision: null },
    ]);
  });
});
