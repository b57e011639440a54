// Interrupting cancels runs: admitRun with multitask INTERRUPT, and a schedule whose overlap is
// INTERRUPT, need CANCEL besides ADMIT. A key without the CANCEL scope, or an access token without
// CANCEL on the runs it would stop, is refused with ForbiddenError and the runs stay as they were.
import { afterEach, describe, expect, it } from "vitest";
import { rawRequest } from "../support/raw-request.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe("multitask INTERRUPT needs CANCEL", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });
  const gql = (bearer: string, query: string, variables: Record<string, unknown> = {}) => rawRequest(t!.app, bearer, query, variables);

  const ADMIT = `mutation($w: ID!, $c: ID, $q: String!, $m: MultitaskStrategy) { admitRun(input: { workspaceId: $w, conversationId: $c, question: $q, multitask: $m }) {
    __typename ... on AdmitRunSuccess { run { id conversation { id } } } ... on Error { message } } }`;
  const KEY = `mutation($s: [AccessOperation!]) { createApiKey(input: { name: "k", scopes: $s }) { ... on CreateApiKeySuccess { secret } } }`;
  const TOKEN = `mutation($g: [AccessGrantInput!]!) { createAccessToken(input: { grants: $g }) { ... on CreateAccessTokenSuccess { token } ... on Error { message } } }`;
  const STATUS = `query($r: ID!) { run(id: $r) { status } }`;

  async function ownerWithRun() {
    t = await startTestApp("pglite", { authRequired: true });
    const owner = await t.createPrincipal("Owner");
    const w = (await gql(owner, `mutation { createWorkspace(input: { title: "W", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`)).data!
      .createWorkspace.workspace.id as string;
    const run = (await gql(owner, ADMIT, { w, q: "the owner's run" })).data!.admitRun.run;
    const status = async (id: string) => (await gql(owner, STATUS, { r: id })).data!.run.status as string;
    return { owner, w, run: run.id as string, c: run.conversation.id as string, status };
  }

  it("refuses a key without CANCEL and leaves the run; a key with CANCEL interrupts", async () => {
    const { owner, w, run, c, status } = await ownerWithRun();
    const admitOnly = (await gql(owner, KEY, { s: ["READ", "ADMIT"] })).data!.createApiKey.secret as string;
    const refused = (await gql(admitOnly, ADMIT, { w, c, q: "replace it", m: "INTERRUPT" })).data!.admitRun;
    expect(refused).toEqual({
      __typename: "ForbiddenError",
      message:
        "This API key may not CANCEL (its scopes lack it), so it cannot admit a run with multitask INTERRUPT, which cancels the conversation's active runs.",
    });
    expect(await status(run)).toBe("QUEUED");
    // The same key still queues behind the run (ENQUEUE cancels nothing).
    expect((await gql(admitOnly, ADMIT, { w, c, q: "after it", m: "ENQUEUE" })).data!.admitRun.__typename).toBe("AdmitRunSuccess");

    const canCancel = (await gql(owner, KEY, { s: ["READ", "ADMIT", "CANCEL"] })).data!.createApiKey.secret as string;
    expect((await gql(canCancel, ADMIT, { w, c, q: "replace it", m: "INTERRUPT" })).data!.admitRun.__typename).toBe("AdmitRunSuccess");
    expect(await status(run)).toBe("CANCELLED");
  });

  it("refuses a token without CANCEL on the runs it would stop; one with CANCEL on the conversation interrupts", async () => {
    const { owner, w, run, c, status } = await ownerWithRun();
    const mint = async (operations: string[]) =>
      (
        await gql(owner, TOKEN, {
          g: [
            { resourceId: w, operations: ["READ", "ADMIT"] },
            { resourceId: c, operations },
          ],
        })
      ).data!.createAccessToken.token as string;
    const admitOnly = await mint(["READ", "ADMIT"]);
    const refused = (await gql(admitOnly, ADMIT, { w, c, q: "replace it", m: "INTERRUPT" })).data!.admitRun;
    expect(refused.__typename).toBe("ForbiddenError");
    expect(refused.message).toBe(`This access token may not CANCEL run ${run}, so it cannot admit a run with multitask INTERRUPT, which would cancel it.`);
    expect(await status(run)).toBe("QUEUED");
    // Nothing of the refused admission is left: the conversation still has only the owner's run.
    expect((await gql(owner, `{ runsCount }`)).data!.runsCount).toBe(1);

    const canCancel = await mint(["READ", "ADMIT", "CANCEL"]);
    expect((await gql(canCancel, ADMIT, { w, c, q: "replace it", m: "INTERRUPT" })).data!.admitRun.__typename).toBe("AdmitRunSuccess");
    expect(await status(run)).toBe("CANCELLED");
  });

  it("refuses a key without CANCEL a schedule that interrupts: creating, changing, resuming or triggering it", async () => {
    const { owner, w } = await ownerWithRun();
    const admitOnly = (await gql(owner, KEY, { s: ["READ", "ADMIT"] })).data!.createApiKey.secret as string;
    const CREATE = `mutation($w: ID!, $o: ScheduleOverlap) { createSchedule(input: { workspaceId: $w, question: "q", intervalSeconds: 3600, overlap: $o }) {
      __typename ... on CreateScheduleSuccess { schedule { id } } ... on Error { message } } }`;
    const UPDATE = `mutation($id: ID!, $o: ScheduleOverlap) { updateSchedule(input: { id: $id, overlap: $o }) { __typename ... on Error { message } } }`;
    const TRIGGER = `mutation($id: ID!) { triggerSchedule(input: { id: $id }) { __typename ... on Error { message } } }`;
    const message =
      "This API key may not CANCEL (its scopes lack it), so it cannot create, change, resume or trigger a schedule whose overlap is INTERRUPT, which cancels its previous run.";

    expect((await gql(admitOnly, CREATE, { w, o: "INTERRUPT" })).data!.createSchedule).toEqual({ __typename: "ForbiddenError", message });
    const skipping = (await gql(admitOnly, CREATE, { w, o: "SKIP" })).data!.createSchedule.schedule.id as string;
    expect((await gql(admitOnly, UPDATE, { id: skipping, o: "INTERRUPT" })).data!.updateSchedule).toEqual({ __typename: "ForbiddenError", message });
    expect((await gql(admitOnly, TRIGGER, { id: skipping })).data!.triggerSchedule.__typename).toBe("TriggerScheduleSuccess");

    const interrupting = (await gql(owner, CREATE, { w, o: "INTERRUPT" })).data!.createSchedule.schedule.id as string;
    expect((await gql(admitOnly, TRIGGER, { id: interrupting })).data!.triggerSchedule).toEqual({ __typename: "ForbiddenError", message });
    // Paused by the owner, it stays paused for the key: resumed, it would interrupt at its next fire.
    const PAUSE = `mutation($id: ID!) { pauseSchedule(input: { id: $id }) { __typename } }`;
    const RESUME = `mutation($id: ID!) { resumeSchedule(input: { id: $id }) { __typename ... on Error { message } } }`;
    expect((await gql(owner, PAUSE, { id: interrupting })).data!.pauseSchedule.__typename).toBe("PauseScheduleSuccess");
    expect((await gql(admitOnly, RESUME, { id: interrupting })).data!.resumeSchedule).toEqual({ __typename: "ForbiddenError", message });
    const paused = (await gql(owner, `query($id: ID!) { node(id: $id) { ... on Schedule { paused } } }`, { id: interrupting })).data!.node;
    expect(paused).toEqual({ paused: true });
    expect((await gql(admitOnly, RESUME, { id: skipping })).data!.resumeSchedule.__typename).toBe("ResumeScheduleSuccess");
    expect((await gql(admitOnly, UPDATE, { id: interrupting, o: "ENQUEUE" })).data!.updateSchedule.__typename).toBe("UpdateScheduleSuccess");
    const schedules = (await gql(owner, `{ runsCount }`)).data!.runsCount;
    // The owner's run and the one fire of the skipping schedule: the refused trigger admitted nothing.
    expect(schedules).toBe(2);
  });
});
