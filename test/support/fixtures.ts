// Small SDK-level helpers: create objects and unwrap the success member of a payload union.
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { parse } from "graphql";
import type { DossierClient } from "../../sdk/client.js";
import {
  AdmitRunDocument,
  type AdmitRunInput,
  CreateArtifactDocument,
  CreateWorkspaceDocument,
  PublishVersionDocument,
  type PublishVersionInput,
  StartConversationDocument,
} from "../../sdk/generated/graphql.js";

/** The payload narrowed to `typename`, or a failed test naming what came back instead. */
export function expectType<T extends { __typename: string }, N extends T["__typename"]>(payload: T, typename: N): Extract<T, { __typename: N }> {
  if (payload.__typename !== typename) {
    throw new Error(`expected ${typename}, got ${payload.__typename}: ${JSON.stringify(payload)}`);
  }
  return payload as Extract<T, { __typename: N }>;
}

export async function createWorkspace(client: DossierClient, goal = "Map EU battery cell capacity for 2027") {
  const result = await client.request(CreateWorkspaceDocument, { input: { title: "Batteries", goal } });
  return expectType(result.createWorkspace, "CreateWorkspaceSuccess").workspace;
}

export async function publish(client: DossierClient, input: PublishVersionInput) {
  const result = await client.request(PublishVersionDocument, { input });
  return expectType(result.publishVersion, "PublishVersionSuccess");
}

export async function admit(client: DossierClient, input: AdmitRunInput) {
  const result = await client.request(AdmitRunDocument, { input });
  return expectType(result.admitRun, "AdmitRunSuccess");
}

/** admitRun asking only what a caller without READ is answered: the run's id and status. */
const ADMIT_ACTED_ON = parse(
  "mutation AdmitActedOn($input: AdmitRunInput!) { admitRun(input: $input) { __typename ... on AdmitRunSuccess { run { id status } } ... on Error { message } } }",
) as TypedDocumentNode<
  { admitRun: { __typename: "AdmitRunSuccess"; run: { id: string; status: string } } | { __typename: "ForbiddenError"; message: string } },
  { input: AdmitRunInput }
>;

/** Admits as a key without READ or a token without READ where the run lies may: the run's id and status. */
export async function admitUnread(client: DossierClient, input: AdmitRunInput) {
  const result = await client.request(ADMIT_ACTED_ON, { input });
  return expectType(result.admitRun, "AdmitRunSuccess");
}

export async function startConversation(client: DossierClient, title = "Chat") {
  const result = await client.request(StartConversationDocument, { input: { title } });
  return expectType(result.startConversation, "StartConversationSuccess").conversation;
}

export async function createArtifact(client: DossierClient, mimeType = "text/html", content = "<h1>Report</h1>") {
  const result = await client.request(CreateArtifactDocument, { input: { name: "report.html", mimeType, content } });
  return expectType(result.createArtifact, "CreateArtifactSuccess").artifact;
}
