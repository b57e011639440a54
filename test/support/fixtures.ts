// Small SDK-level helpers: create objects and unwrap the success member of a payload union.
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

export async function startConversation(client: DossierClient, title = "Chat") {
  const result = await client.request(StartConversationDocument, { input: { title } });
  return expectType(result.startConversation, "StartConversationSuccess").conversation;
}

export async function createArtifact(client: DossierClient, mimeType = "text/html", content = "<h1>Report</h1>") {
  const result = await client.request(CreateArtifactDocument, { input: { name: "report.html", mimeType, content } });
  return expectType(result.createArtifact, "CreateArtifactSuccess").artifact;
}
