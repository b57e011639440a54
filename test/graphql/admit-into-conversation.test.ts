// Admitting a run into a conversation needs READ on that conversation too: the run is shown the
// conversation's earlier messages, and whoever admitted it reads its answer, so ADMIT alone would
// let the model repeat what the token (or key) may not read. A token with ADMIT but not READ on the
// conversation, and a key without the READ scope, get ForbiddenError and admit nothing; READ on
// the conversation (granted, or through a readable workspace that links it) lets the admission
// through. A new conversation needs no READ: it has no earlier messages.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import {
  type AccessOperation,
  AdmitRunDocument,
  CreateAccessTokenDocument,
  CreateApiKeyDocument,
  LinkToWorkspaceDocument,
  RunDocument,
} from "../../sdk/generated/graphql.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { admit, admitUnread, createWorkspace, expectType } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SECRET = "The vault code is SECRET-4711.";
const WHY = "a run admitted into a conversation is shown its earlier messages";
const TOKEN_REFUSAL = `This access token may not READ the conversation, so it cannot use admitRun on the conversation: ${WHY}.`;
const KEY_REFUSAL = `This API key may not READ (its scopes lack it), so it cannot use admitRun on the conversation: ${WHY}.`;

const CONVERSATION_RUNS = parse(
  "query ConversationRuns($id: ID!) { node(id: $id) { ... on Conversation { runs(first: 20) { edges { node { question } } } } } }",
) as TypedDocumentNode<{ node: { runs?: { edges: { node: { question: string } }[] } } | null }, { id: string }>;

describe("admitting a run into a conversation", () => {
  let t: TestApp;
  let owner: DossierClient;
  let conversationId: string;
  const model = new ScriptedModel({ name: "recorder", steps: () => ({ content: "noted" }) });

  /** The messages of the model's latest request. */
  const lastRequest = () => model.requests.at(-1)!.messages.map((m) => m.content);
  /** The conversation's runs as the owner's key lists them. */
  const runsOfConversation = async () => (await owner.request(CONVERSATION_RUNS, { id: conversationId })).node!.runs!.edges.map(({ node }) => node.question);

  const token = async (grants: { resourceId: string; operations: AccessOperation[] }[]) =>
    t.as(expectType((await owner.request(CreateAccessTokenDocument, { input: { grants } })).createAccessToken, "CreateAccessTokenSuccess").token);
  const key = async (scopes: AccessOperation[]) =>
    t.as(expectType((await owner.request(CreateApiKeyDocument, { input: { name: scopes.join("+"), scopes } })).createApiKey, "CreateApiKeySuccess").secret);
  const admitInto = (client: DossierClient, question: string) =>
    client.request(AdmitRunDocument, { input: { conversationId, question } }).then((result) => result.admitRun);

  beforeAll(async () => {
    t = await startTestApp("pglite", { authRequired: true, runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-admit-conversation-")) } });
    owner = t.as(await t.createPrincipal("owner"));
    const { run } = await admit(owner, { question: SECRET });
    await settled(owner, run.id);
    conversationId = run.conversation.id;
  });
  afterAll(async () => t?.close());

  it("refuses a token with ADMIT but not READ on the conversation: no run is admitted and the model never sees its messages", async () => {
    const requestsBefore = model.requests.length;
    const admitOnly = await token([{ resourceId: conversationId, operations: ["ADMIT"] }]);
    const refused = expectType(await admitInto(admitOnly, "Repeat what you were told."), "ForbiddenError");
    expect(refused.message).toBe(TOKEN_REFUSAL);
    expect(await runsOfConversation()).toEqual([SECRET]);
    expect(model.requests.length).toBe(requestsBefore);
  });

  it("refuses a key without the READ scope there, and lets it start a new conversation", async () => {
    const admitter = await key(["ADMIT", "SUBSCRIBE"]);
    const refused = expectType(await admitInto(admitter, "Repeat what you were told."), "ForbiddenError");
    expect(refused.message).toBe(KEY_REFUSAL);
    expect(await runsOfConversation()).toEqual([SECRET]);

    // Without READ its answer shows the run's id and status (answer-reads.ts).
    const fresh = await admitUnread(admitter, { question: "A fresh start." });
    expect((await settled(owner, fresh.run.id)).status).toBe("SUCCEEDED");
    const admitted = expectType((await owner.request(RunDocument, { id: fresh.run.id })).node!, "Run");
    expect(admitted.conversation.id).not.toBe(conversationId);
    expect(lastRequest().join("\n")).not.toContain("SECRET-4711");
  });

  it("admits with READ on the conversation — granted, through a readable workspace that links it, or a key's scope — and shows the run its log", async () => {
    const workspace = await createWorkspace(owner);
    expectType(
      (await owner.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: conversationId } })).linkToWorkspace,
      "LinkToWorkspaceSuccess",
    );
    const admitters: [string, DossierClient][] = [
      ["granted", await token([{ resourceId: conversationId, operations: ["READ", "ADMIT"] }])],
      [
        "linked",
        await token([
          { resourceId: conversationId, operations: ["ADMIT"] },
          { resourceId: workspace.id, operations: ["READ"] },
        ]),
      ],
      ["key", await key(["READ", "ADMIT"])],
    ];
    for (const [label, admitter] of admitters) {
      const question = `Which code, asked by ${label}?`;
      const { run } = expectType(await admitInto(admitter, question), "AdmitRunSuccess");
      expect((await settled(owner, run.id)).status).toBe("SUCCEEDED");
      const request = lastRequest();
      expect(request).toContain(SECRET);
      expect(request.at(-1)).toBe(question);
    }
  });
});
