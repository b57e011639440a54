// Spilled tool results of a run (R10–R12): the handles the model can still read back, with
// what it was shown of each. The whole result is the TOOL message in `Run.messages`.
import { fromStored } from "../../domain/text/stored-text.js";
import type { Spill } from "../../generated/prisma/client.js";
import { RunNode } from "./run.js";
import { builder } from "../builder.js";
import { encodeGlobalId } from "../global-id.js";
import { describePage, LIST_PAGE, type KeysetList, readConnection, listConnection } from "../list-connection.js";

const SPILLS: KeysetList = {
  typename: "Spill",
  order: [
    ["createdAt", "asc"],
    ["id", "asc"],
  ],
  ...LIST_PAGE,
};

export const SpillObject = builder.prismaObject("Spill", {
  description:
    "A tool result too large for the model's context: the model saw a preview and reads the rest back through the handle. The whole result is stored once, as its TOOL message in the log.",
  fields: (t) => ({
    id: t.id({ description: "Names the spill as `after` in `Run.spills`.", resolve: (spill) => encodeGlobalId("Spill", spill.id) }),
    handle: t.exposeString("handle", { description: "The read-back handle: spill://<agent>/<conversation>/<toolCallId>." }),
    tool: t.exposeString("toolName", { description: "The tool whose result was spilled." }),
    size: t.exposeInt("sizeBytes", { description: "Bytes (UTF-8) of the whole result." }),
    preview: t.string({
      description: "What the model saw in place of the result: its first characters, or whole leading items of a JSON list.",
      resolve: (spill) => fromStored(spill.preview),
    }),
    strategy: t.exposeString("strategy", { description: 'How the preview was made: "head" (first characters) or "json-items" (whole leading list items).' }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the result was spilled." }),
    message: t.relation("message", { description: "The TOOL message holding the whole result (readable after release too)." }),
  }),
});

builder.prismaObjectField(RunNode, "spills", (t) =>
  listConnection(t, {
    type: "Spill",
    name: "SpillConnection",
    description: describePage(
      "The run's spilled tool results whose handles are live, oldest first; empty once the run has ended and released them. A released spill still names its place as `after`.",
      SPILLS,
    ),
    list: SPILLS,
    resolve: (query, run, args, ctx) => readConnection<Spill>(ctx.prisma.spill, SPILLS, args, { scope: { runId: run.id }, where: { releasedAt: null }, query }),
  }),
);
