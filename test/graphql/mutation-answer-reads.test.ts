// A mutation's answer shows what it reaches only to a caller that may READ it. A token with
// ADMIT (or CANCEL) but not READ on a run, and a key without the READ scope, get the id and a
// run's status and null for every nullable field; asking for one that may not be null (a run's
// question, a conversation's messages) is refused with ForbiddenError before the mutation acts.
// A caller that may READ gets everything, as before.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { getNamedType, isInterfaceType, isObjectType, isUnionType, type GraphQLNamedType } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import {
  type AccessOperation,
  AdmitRunDocument,
  AdmitRunStatusDocument,
  CreateAccessTokenDocument,
  CreateApiKeyDocument,
} from "../../sdk/generated/graphql.js";
import { RESEARCH_TYPES } from "../../src/graphql/answer-reads.js";
import { schema } from "../../src/graphql/schema.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { admit, expectType } from "../support/fixtures.js";
import { rawRequest } from "../support/raw-request.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SECRET = "The vault code is SECRET-4711.";
const ANSWER = "Noted: the code.";

const TAG = `mutation($runId: ID!, $tag: String!) { updateRunTags(input: { runId: $runId, add: [$tag] }) {
  __typename ... on UpdateRunTagsSuccess { run { id status answer workspace { id } } } ... on Error { message } } }`;
const TAG_READING = `mutation($runId: ID!, $tag: String!) { updateRunTags(input: { runId: $runId, add: [$tag] }) {
  __typename ... on UpdateRunTagsSuccess { run { id status answer question conversation { messages(first: 10) { edges { node { content } } } } } }
  ... on Error { message } } }`;
const CANCEL = `mutation($runId: ID!) { cancelRun(input: { runId: $runId }) {
  __typename ... on CancelRunSuccess { run { id status answer } } ... on Error { message } } }`;
const CANCEL_READING = `mutation($runId: ID!) { cancelRun(input: { runId: $runId }) {
  __typename ... on CancelRunSuccess { run { id status question } } ... on Error { message } } }`;
const FORK = `mutation($c: ID!, $m: ID!) { forkConversation(input: { conversationId: $c, atMessageId: $m }) {
  __typename ... on ForkConversationSuccess { conversation { id forkedFrom { conversation { id } } } } ... on Error { message } } }`;
const FORK_READING = `mutation($c: ID!, $m: ID!) { forkConversation(input: { conversationId: $c, atMessageId: $m }) {
  __typename ... on ForkConversationSuccess { conversation { id messages(first: 10) { edges { node { content } } } } } ... on Error { message } } }`;
const LOG = `query($id: ID!) { node(id: $id) { ... on Conversation { messages(first: 10) { edges { node { id content } } } } } }`;
const TAGS = `query($id: ID!) { run(id: $id) { tags } }`;
const CONVERSATIONS = `{ conversations(first: 50) { edges { node { id } } } }`;

const TOKEN_REFUSAL = (field: string, asked: string) =>
  `This access token may not READ the run, so it cannot use ${field} on the run as asked: without READ its answer shows only the id of what it acted on (and a run's status), not ${asked}.`;
const KEY_REFUSAL = (field: string, asked: string) =>
  `This API key may not READ (its scopes lack it), so it cannot use ${field} as asked: without READ its answer shows only the id of what it acted on (and a run's status), not ${asked}.`;

describe("mutation answers and READ", () => {
  let t: TestApp;
  let ownerKey: string;
  let owner: DossierClient;
  let runId: string;
  let conversationId: string;
  let firstMessageId: string;
  const model = new ScriptedModel({ name: "recorder", steps: () => ({ content: ANSWER }) });

  const as = (bearer: string, query: string, variables: Record<string, unknown> = {}) => rawRequest(t.app, bearer, query, variables);
  const token = async (grants: { resourceId: string; operations: AccessOperation[] }[]) =>
    expectType((await owner.request(CreateAccessTokenDocument, { input: { grants } })).createAccessToken, "CreateAccessTokenSuccess").token;
  const key = async (scopes: AccessOperation[]) =>
    expectType((await owner.request(CreateApiKeyDocument, { input: { name: scopes.join("+"), scopes } })).createApiKey, "CreateApiKeySuccess").secret;
  const tagsOfRun = async () => (await as(ownerKey, TAGS, { id: runId })).data!.run.tags as string[];
  const conversationCount = async () => (await as(ownerKey, CONVERSATIONS)).data!.conversations.edges.length as number;

  beforeAll(async () => {
    t = await startTestApp("pglite", { authRequired: true, runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-answer-reads-")) } });
    ownerKey = await t.createPrincipal("owner");
    owner = t.as(ownerKey);
    const { run } = await admit(owner, { question: SECRET });
    await settled(owner, run.id);
    runId = run.id;
    conversationId = run.conversation.id;
    firstMessageId = (await as(ownerKey, LOG, { id: conversationId })).data!.node.messages.edges[0].node.id;
  });
  afterAll(async () => t?.close());

  it("answers a token with ADMIT only on the conversation the run's id and status, and refuses before acting when asked its question or log", async () => {
    const admitOnly = await token([{ resourceId: conversationId, operations: ["ADMIT"] }]);
    const tagged = await as(admitOnly, TAG, { runId, tag: "x" });
    expect(tagged).toEqual({
      data: { updateRunTags: { __typename: "UpdateRunTagsSuccess", run: { id: runId, status: "SUCCEEDED", answer: null, workspace: null } } },
    });
    expect(await tagsOfRun()).toEqual(["x"]);

    const refused = await as(admitOnly, TAG_READING, { runId, tag: "y" });
    expect(refused).toEqual({ data: { updateRunTags: { __typename: "ForbiddenError", message: TOKEN_REFUSAL("updateRunTags", "Run.question") } } });
    expect(JSON.stringify(refused)).not.toContain("SECRET-4711");
    expect(await tagsOfRun()).toEqual(["x"]);
  });

  it("answers a token with CANCEL only the run's id and status", async () => {
    const cancelOnly = await token([{ resourceId: runId, operations: ["CANCEL"] }]);
    const refused = await as(cancelOnly, CANCEL_READING, { runId });
    expect(refused.data!.cancelRun).toEqual({ __typename: "ForbiddenError", message: TOKEN_REFUSAL("cancelRun", "Run.question") });
    const cancelled = await as(cancelOnly, CANCEL, { runId });
    expect(cancelled.data!.cancelRun).toMatchObject({ run: { id: runId, status: "SUCCEEDED", answer: null } });
  });

  it("shows a token that may READ the run everything its answer asks for", async () => {
    const reader = await token([{ resourceId: conversationId, operations: ["ADMIT", "READ"] }]);
    const tagged = await as(reader, TAG_READING, { runId, tag: "z" });
    expect(tagged.errors).toBeUndefined();
    const run = tagged.data!.updateRunTags.run;
    expect([run.question, run.answer, run.conversation.messages.edges.map(({ node }: { node: { content: string } }) => node.content)]).toEqual([
      SECRET,
      ANSWER,
      [SECRET, ANSWER],
    ]);
  });

  it("answers a key without READ that forks a conversation the fork's id, not its messages; a key with READ sees them", async () => {
    const admitter = await key(["ADMIT"]);
    const before = await conversationCount();
    const refused = await as(admitter, FORK_READING, { c: conversationId, m: firstMessageId });
    expect(refused).toEqual({
      data: { forkConversation: { __typename: "ForbiddenError", message: KEY_REFUSAL("forkConversation", "Conversation.messages") } },
    });
    expect(await conversationCount()).toBe(before);

    const forked = (await as(admitter, FORK, { c: conversationId, m: firstMessageId })).data!.forkConversation;
    expect(forked).toMatchObject({ __typename: "ForkConversationSuccess", conversation: { forkedFrom: null } });
    expect(await conversationCount()).toBe(before + 1);

    const reader = await key(["ADMIT", "READ"]);
    const read = (await as(reader, FORK_READING, { c: conversationId, m: firstMessageId })).data!.forkConversation;
    expect(read.conversation.messages.edges.map(({ node }: { node: { content: string } }) => node.content)).toEqual([SECRET]);
  });

  it("lets an agent's key without READ admit through the SDK's AdmitRunStatusDocument, while AdmitRunDocument (its question) is refused", async () => {
    const agent = t.as(await key(["ADMIT", "SUBSCRIBE"]));
    const input = { question: "A run of an agent key." };
    const refused = (await agent.request(AdmitRunDocument, { input })).admitRun;
    expect(refused).toMatchObject({ __typename: "ForbiddenError", message: expect.stringContaining("This API key may not READ") });
    const admitted = expectType((await agent.request(AdmitRunStatusDocument, { input })).admitRun, "AdmitRunSuccess");
    expect(admitted.run).toEqual({ id: expect.any(String), status: "QUEUED" });
    expect((await settled(owner, admitted.run.id)).status).toBe("SUCCEEDED");
  });

  it("shows a token that may READ one run but only ADMIT in its conversation the conversation's id, not its log", async () => {
    const { run: second } = await admit(owner, { conversationId, question: "A second question, not for the token." });
    await settled(owner, second.id);
    const reader = await token([
      { resourceId: runId, operations: ["READ"] },
      { resourceId: conversationId, operations: ["ADMIT"] },
    ]);
    const open = await as(reader, `query($id: ID!) { run(id: $id) { question conversation { id } } }`, { id: runId });
    expect(open).toEqual({ data: { run: { question: SECRET, conversation: { id: conversationId } } } });
    const asked = await as(reader, `query($id: ID!) { run(id: $id) { question conversation { id messages(first: 10) { edges { node { content } } } } } }`, {
      id: runId,
    });
    expect(asked.data).toEqual({ run: null });
    expect(asked.errors!.map((e) => [e.message, e.extensions?.code])).toEqual([["An access token cannot read Conversation.messages.", "FORBIDDEN"]]);
    expect(JSON.stringify(asked)).not.toContain("second question");
  });

  it("counts as research every Node type a mutation's answer reaches, or names it as one of the principal's settings", () => {
    // What the scope that manages them governs, not READ (answer-reads.ts).
    const SETTINGS = new Set([
      "ApiKey",
      "Webhook",
      "WebhookDelivery",
      "McpServer",
      "Skill",
      "Schedule",
      "ScheduleFire",
      "Score",
      "ScoreConfig",
      "AgentProfile",
      "Principal",
      "ToolApproval",
    ]);
    const reached = new Set<string>();
    const visit = (type: GraphQLNamedType) => {
      if (reached.has(type.name)) return;
      reached.add(type.name);
      if (isUnionType(type)) for (const member of type.getTypes()) visit(member);
      if (isObjectType(type) || isInterfaceType(type)) for (const field of Object.values(type.getFields())) visit(getNamedType(field.type));
    };
    for (const field of Object.values(schema.getMutationType()!.getFields())) visit(getNamedType(field.type));
    const nodes = [...reached].filter((name) => {
      const type = schema.getType(name);
      return isObjectType(type) && type.getInterfaces().some((i) => i.name === "Node");
    });
    expect(nodes.filter((name) => !RESEARCH_TYPES.has(name) && !SETTINGS.has(name)).sort()).toEqual([]);
  });
});
