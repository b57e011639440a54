// A run's tags and metadata (Run.tags, Run.metadata, updateRunTags): labels a client finds runs by.
import { NotFoundError, ValidationError } from "../../domain/errors.js";
import type { Run } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { requireIdOfType } from "../global-id.js";
import { RunNode } from "./run.js";
import { METADATA_RULE, TAGS_RULE } from "./run-filter.js";

builder.prismaObjectFields(RunNode, (t) => ({
  tags: t.stringList({
    description: "Labels for finding the run (AdmitRunInput.tags, updateRunTags), each once, in the order first given.",
    resolve: (run) => run.tags ?? [],
  }),
  metadata: t.field({
    type: "JSON",
    description: `What the admitting client attached to the run (AdmitRunInput.metadata): ${METADATA_RULE}; {} when none. Set once, at admission.`,
    resolve: (run) => run.metadata ?? {},
  }),
}));

const UpdateRunTagsInput = builder.inputType("UpdateRunTagsInput", {
  fields: (t) => ({
    runId: t.id({ required: true }),
    add: t.stringList({ description: "Tags to add (those the run holds already stay where they are; new ones come last)." }),
    remove: t.stringList({ description: "Tags to remove; a tag both added and removed is removed." }),
  }),
});

const UpdateRunTagsSuccess = builder.objectRef<{ run: Run }>("UpdateRunTagsSuccess").implement({
  fields: (t) => ({ run: t.field({ type: RunNode, resolve: (result) => result.run }) }),
});

builder.mutationField("updateRunTags", (t) =>
  t.field({
    type: UpdateRunTagsSuccess,
    description: `Adds and removes tags of a run, at any status, for triage: ${TAGS_RULE}; a change that would leave more is a ValidationError and changes nothing. Concurrent changes of one run all apply (one atomic update each). Needs the run's owner, or an access token (or API key scope) with ADMIT on the run — the right to admit it with tags.`,
    args: { input: t.arg({ type: UpdateRunTagsInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "UpdateRunTagsPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      run: await ctx.services.runs.updateTags(ctx.actor, requireIdOfType(String(input.runId), "Run", "runId"), { add: input.add, remove: input.remove }),
    }),
  }),
);
