// A version number no version can have (a version is a 32-bit integer in the database) is a
// wrong argument: read_material and propose_checkpoint answer it as they answer any other, and
// never take it to the database.
import { describe, expect, it } from "vitest";
import type { CheckpointProposal } from "../../src/generated/prisma/client.js";
import type { Transact, Tx } from "../../src/domain/transaction.js";
import { createProposeCheckpointTool, createReadMaterialTool } from "../../src/runtime/workspace/material-tools.js";
import { testRun, toolContext } from "../support/tool-context.js";

const unreachable = () => {
  throw new Error("the database is not asked about a version no version can have");
};
const PUBLICATION = "UHVibGljYXRpb246cDE";

describe("a version number past any version", () => {
  it("read_material answers it with the usual argument message", async () => {
    const tool = createReadMaterialTool({
      publications: { readVersion: unreachable },
      history: { withinReach: unreachable },
      ledger: { record: unreachable },
    });
    await expect(tool.execute({ publicationId: PUBLICATION, version: 2_147_483_648 }, toolContext())).rejects.toMatchObject({
      name: "ToolError",
      message: "Invalid arguments: version: no version is numbered above 2147483647.",
    });
    await expect(tool.execute({ publicationId: PUBLICATION, version: 2_147_483_647 }, toolContext())).rejects.toThrow("not asked about");
  });

  it("propose_checkpoint records the proposal as invalid for that reason, and reads no ledger", async () => {
    const recorded: { status: string; reason: string | null }[] = [];
    const write: Transact = (work) => work({} as Tx, []);
    const tool = createProposeCheckpointTool({
      proposals: {
        count: async () => 0,
        record: async (_tx, proposal) => {
          recorded.push(proposal);
          return {} as CheckpointProposal;
        },
      },
      ledger: { reads: unreachable },
    });
    const context = toolContext({ run: testRun({ workspaceId: "w1" }), write });
    await expect(tool.execute({ summary: "s", citedMaterials: [{ publicationId: PUBLICATION, version: 2_147_483_648 }] }, context)).rejects.toThrow(
      "The proposal was recorded as invalid and will not be applied: citedMaterials.0.version: no version is numbered above 2147483647.",
    );
    expect(recorded.map((r) => [r.status, r.reason])).toEqual([["INVALID", "citedMaterials.0.version: no version is numbered above 2147483647"]]);
  });
});
