// steerRun's answer, like every mutation's, shows what it reaches only to a caller that may READ
// it: a token with ADMIT alone on the run's conversation steers the run and is answered the
// input's id and the run's id and status; asking for the input's text or the run's question is
// refused with ForbiddenError before anything is stored. A token that may READ sees it all. (The
// run is one a token admitted into the conversation: a token steers only such runs.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { type AccessOperation, CreateAccessTokenDocument } from "../../sdk/generated/graphql.js";
import { admit, expectType, startConversation } from "../support/fixtures.js";
import { rawRequest } from "../support/raw-request.js";
import { settled } from "../support/scripted-runs.js";
import { Gate, inputsOf, sandbox, turnsModel, workTool } from "../support/steering.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor } from "../support/wait.js";

const SECRET = "The vault code is SECRET-4711.";
const STEER = (asked: string) => `mutation($runId: ID!, $text: String!) { steerRun(input: { runId: $runId, text: $text }) {
  __typename ... on SteerRunSuccess { input { ${asked} } } ... on Error { message } } }`;
const REFUSAL = (asked: string) =>
  `This access token may not READ the run, so it cannot use steerRun on the run as asked: without READ its answer shows only the id of what it acted on (and a run's status), not ${asked}.`;

describe("steerRun's answer and READ", () => {
  let t: TestApp;
  let ownerKey: string;
  let owner: DossierClient;
  let runId: string;
  let conversationId: string;
  const gate = new Gate();

  const as = (bearer: string, query: string, variables: Record<string, unknown> = {}) => rawRequest(t.app, bearer, query, variables);
  const token = async (operations: AccessOperation[]) =>
    expectType(
      (await owner.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: conversationId, operations }] } })).createAccessToken,
      "CreateAccessTokenSuccess",
    ).token;
  const texts = async () => (await inputsOf(owner, runId)).map((input) => input.text);

  beforeAll(async () => {
    t = await startTestApp("pglite", { authRequired: true, runtime: { model: turnsModel(2), sandboxDir: sandbox(), extraTools: [workTool({ gate })] } });
    ownerKey = await t.createPrincipal("owner");
    owner = t.as(ownerKey);
    // A run a token admitted into the conversation: tokens steer only runs that read no more than they may.
    conversationId = (await startConversation(owner)).id;
    const { run } = await admit(t.as(await token(["READ", "ADMIT"])), { conversationId, question: SECRET });
    runId = run.id;
    await waitFor(() => gate.reached === 1);
  });
  afterAll(async () => t?.close());

  it("answers a token with ADMIT alone the ids and the run's status, and refuses before storing when asked the text or the question", async () => {
    const admitOnly = await token(["ADMIT"]);
    for (const [asked, field] of [
      ["id text", "RunInput.text"],
      ["id run { id question }", "Run.question"],
      ["id run { conversation { messages(first: 5) { edges { node { content } } } } }", "Run.conversation"],
    ] as const) {
      const refused = await as(admitOnly, STEER(asked), { runId, text: `refused: ${field}` });
      expect(refused).toEqual({ data: { steerRun: { __typename: "ForbiddenError", message: REFUSAL(field) } } });
      expect(JSON.stringify(refused)).not.toContain("SECRET-4711");
    }
    expect(await texts()).toEqual([]);

    const steered = await as(admitOnly, STEER("id message { id } run { id status answer }"), { runId, text: "Focus on 2025." });
    expect(steered).toEqual({
      data: {
        steerRun: { __typename: "SteerRunSuccess", input: { id: expect.any(String), message: null, run: { id: runId, status: "RUNNING", answer: null } } },
      },
    });
    expect(await texts()).toEqual(["Focus on 2025."]);
  });

  it("shows a token that may READ the conversation the input and the run", async () => {
    const reading = await token(["ADMIT", "READ"]);
    const steered = await as(reading, STEER("text status run { question }"), { runId, text: "And 2026." });
    expect(steered.data!.steerRun).toEqual({ __typename: "SteerRunSuccess", input: { text: "And 2026.", status: "PENDING", run: { question: SECRET } } });
    gate.open();
    expect((await settled(owner, runId)).status).toBe("SUCCEEDED");
  });
});
