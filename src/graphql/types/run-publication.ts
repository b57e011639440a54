// What a settled run published, or why it published nothing: fields of Run.
import { builder } from "../builder.js";
import { RunNode } from "./run.js";

export const RunPublicationOutcomeEnum = builder.enumType("RunPublicationOutcome", {
  description: "What a settled run did with its answer.",
  values: {
    PUBLISHED: { description: "The answer became a new publication, linked to the run's workspace." },
    NO_WORKSPACE: { description: "Not published: the run was admitted outside any workspace." },
    NOT_SUCCEEDED: { description: "Not published: the run did not succeed." },
    EMPTY_ANSWER: { description: "Not published: the answer is empty." },
    NO_VISIBLE_CHARACTERS: {
      description: "Not published: the answer has only spaces, control or invisible characters (it is still the run's answer).",
    },
    TOO_LONG: { description: "Not published: the answer is longer than a publication may be (it is still the run's answer)." },
    TOO_MANY_SOURCES: {
      description:
        "Not published: the run consumed more materials than a publication may name as its sources, and a publication never leaves out a source it was built on (the answer is still the run's answer; the reason says how many).",
    },
  } as const,
});

builder.prismaObjectFields(RunNode, (t) => ({
  publicationOutcome: t.field({
    type: RunPublicationOutcomeEnum,
    nullable: true,
    description:
      "What the run did with its answer once it settled: PUBLISHED, or why nothing was published. A model's answer is never refused by the rules for text people write: an answer that is not published is still `answer`, and the run still SUCCEEDED. Null until the run settles (and for runs settled before this was recorded).",
    select: { publication: { select: { outcome: true } } },
    resolve: (run) => run.publication?.outcome ?? null,
  }),
  publicationSkippedReason: t.string({
    nullable: true,
    description: "Why nothing was published, in words; null when the answer was published or the run has not settled.",
    select: { publication: { select: { reason: true } } },
    resolve: (run) => run.publication?.reason ?? null,
  }),
}));
