import { LinkTargetKind } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";

export const LinkKindEnum = builder.enumType(LinkTargetKind, {
  name: "LinkKind",
  description: "The kind of object a workspace link points at.",
});

/** The GraphQL type name of each kind, for global ids. */
export const typenameOfKind: Record<LinkTargetKind, string> = {
  CONVERSATION: "Conversation",
  RUN: "Run",
  PUBLICATION: "Publication",
  ARTIFACT: "Artifact",
};
