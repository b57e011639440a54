// Run caps on API keys and access tokens: a token or key admits runs only with the agent profiles,
// limits and priority its caps allow (a ValidationError naming the field and the cap otherwise,
// nothing admitted), omitted limits take their defaults lowered to the caps, a token or key made by
// a capped key is never wider than it, and a schedule made with a capped key fires within its caps
// (its timer, triggerSchedule), while a capped key can neither trigger nor resume a wider schedule.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idOfType } from "../../src/domain/global-id.js";
import { rawRequest } from "../support/raw-request.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const ADMIT = `mutation($input: AdmitRunInput!) { admitRun(input: $input) {
  __typename ... on AdmitRunSuccess { run { id agent priority limits { maxTurns tokenBudget deadlineSeconds } } }
  ... on ValidationError { issues { field message } } ... on Error { message } } }`;
const KEY = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) {
  __typename ... on CreateApiKeySuccess { secret apiKey { id runCaps { agents maxTurns tokenBudget deadlineSeconds maxPriority } } }
  ... on ValidationError { issues { field message } } } }`;
const TOKEN = `mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) {
  __typename ... on CreateAccessTokenSuccess { token } ... on ValidationError { issues { field message } } ... on Error { message } } }`;
const CAPS = "runCaps { agents maxTurns tokenBudget deadlineSeconds maxPriority }";
const NO_CAPS = { agents: null, maxTurns: null, tokenBudget: null, deadlineSeconds: null, maxPriority: null };

describe("run caps", () => {
  let t: TestApp | undefined;
  // One server; each test acts for a principal of its own.
  beforeAll(async () => {
    t = await startTestApp("pglite", { authRequired: true, agents: [{ name: "analyst", systemPrompt: "You run commands.", tools: ["run_command"] }] });
  });
  afterAll(async () => {
    await t?.close();
  });
  const gql = async (bearer: string, query: string, variables: Record<string, unknown> = {}) => {
    const answer = await rawRequest(t!.app, bearer, query, variables);
    expect(answer.errors, query).toBeUndefined();
    return answer.data!;
  };
  const admit = async (bearer: string, input: Record<string, unknown>) => (await gql(bearer, ADMIT, { input })).admitRun;
  const runsCount = async (owner: string) => (await gql(owner, "{ runsCount }")).runsCount as number;
  const refusal = (field: string, message: string) => expect.objectContaining({ __typename: "ValidationError", issues: [{ field, message }] });
  const capMessage = (cap: string, name: string) => `must be at most ${cap}, the credential's run cap (runCaps.${name})`;

  async function owner() {
    const key = await t!.createPrincipal("Team");
    const w = (await gql(key, `mutation { createWorkspace(input: { title: "W", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`))
      .createWorkspace.workspace.id as string;
    const mint = async (by: string, runCaps?: Record<string, unknown>) =>
      (await gql(by, TOKEN, { input: { grants: [{ resourceId: w, operations: ["READ", "ADMIT"] }], runCaps } })).createAccessToken;
    return { key, w, mint };
  }

  it("refuses a token's admission above each cap, naming the field and the cap, and admits nothing; at the caps it admits", async () => {
    const { key, w, mint } = await owner();
    const caps = { agents: ["researcher"], maxTurns: 5, tokenBudget: 10_000, deadlineSeconds: 600, maxPriority: 2 };
    const { token } = await mint(key, caps);
    const q = { workspaceId: w, question: "q" };

    expect(await admit(token, { ...q, limits: { maxTurns: 6 } })).toEqual(refusal("limits.maxTurns", capMessage("5", "maxTurns")));
    expect(await admit(token, { ...q, limits: { tokenBudget: 10_001 } })).toEqual(refusal("limits.tokenBudget", capMessage("10,000", "tokenBudget")));
    expect(await admit(token, { ...q, limits: { deadlineSeconds: 601 } })).toEqual(refusal("limits.deadlineSeconds", capMessage("600", "deadlineSeconds")));
    expect(await admit(token, { ...q, priority: 3 })).toEqual(refusal("priority", capMessage("2", "maxPriority")));
    expect(await admit(token, { ...q, agent: "analyst" })).toEqual(
      refusal("agent", "analyst is not among the agent profiles the credential's run caps allow (researcher)"),
    );
    // The highest limits the server allows are what an uncapped token could ask for.
    expect(await admit(token, { ...q, limits: { maxTurns: 1_000, tokenBudget: 100_000_000, deadlineSeconds: 604_800 }, priority: 1_000 })).toMatchObject({
      __typename: "ValidationError",
      issues: [{ field: "limits.maxTurns" }, { field: "limits.tokenBudget" }, { field: "limits.deadlineSeconds" }, { field: "priority" }],
    });
    expect(await runsCount(key)).toBe(0);

    const atCaps = await admit(token, { ...q, agent: "researcher", limits: { maxTurns: 5, tokenBudget: 10_000, deadlineSeconds: 600 }, priority: 2 });
    expect(atCaps.run).toMatchObject({ agent: "researcher", priority: 2, limits: { maxTurns: 5, tokenBudget: 10_000, deadlineSeconds: 600 } });
    // The minting key itself is not capped by its tokens' caps.
    expect((await admit(key, { ...q, agent: "analyst", limits: { maxTurns: 1_000 }, priority: 1_000 })).__typename).toBe("AdmitRunSuccess");
    expect(await runsCount(key)).toBe(2);
  });

  it("gives omitted limits, agent and priority their defaults lowered to the caps", async () => {
    const { key, w, mint } = await owner();
    const { token } = await mint(key, { agents: ["analyst"], maxTurns: 5, tokenBudget: 1_000_000, deadlineSeconds: 600, maxPriority: -10 });
    const run = (await admit(token, { workspaceId: w, question: "q" })).run;
    // tokenBudget's cap lies above its default: the default stands.
    expect(run).toMatchObject({ agent: "analyst", priority: -10, limits: { maxTurns: 5, tokenBudget: 200_000, deadlineSeconds: 600 } });
    const partly = (await admit(token, { workspaceId: w, question: "q2", limits: { maxTurns: 3 } })).run;
    expect(partly.limits).toEqual({ maxTurns: 3, tokenBudget: 200_000, deadlineSeconds: 600 });
  });

  it("refuses a token or key wider than its capped key; what they omit they inherit; the key's caps read back", async () => {
    const { key, w, mint } = await owner();
    const created = (await gql(key, KEY, { input: { name: "for end users", runCaps: { agents: ["researcher"], maxTurns: 5, maxPriority: 0 } } })).createApiKey;
    const capped = created.secret as string;
    const keyCaps = { agents: ["researcher"], maxTurns: 5, tokenBudget: null, deadlineSeconds: null, maxPriority: 0 };
    expect(created.apiKey.runCaps).toEqual(keyCaps);
    const listed = (await gql(key, `{ apiKeys { edges { node { id ${CAPS} } } } }`)).apiKeys.edges.map((e: { node: unknown }) => e.node);
    expect(listed).toContainEqual({ id: created.apiKey.id, runCaps: keyCaps });
    expect(listed.filter((node: { runCaps: unknown }) => node.runCaps === null)).toHaveLength(1);

    expect(await mint(capped, { maxTurns: 6 })).toEqual(refusal("runCaps.maxTurns", "must be at most 5, the calling key's own cap"));
    expect(await mint(capped, { maxPriority: 1 })).toEqual(refusal("runCaps.maxPriority", "must be at most 0, the calling key's own cap"));
    expect(await mint(capped, { agents: ["researcher", "analyst"] })).toEqual(
      refusal("runCaps.agents", "may name only agent profiles the calling key's run caps allow (researcher), not analyst"),
    );
    const wider = (await gql(capped, KEY, { input: { name: "wider", runCaps: { maxTurns: 10 } } })).createApiKey;
    expect(wider).toEqual(refusal("runCaps.maxTurns", "must be at most 5, the calling key's own cap"));
    const narrower = (await gql(capped, KEY, { input: { name: "narrower", runCaps: { tokenBudget: 5_000 } } })).createApiKey;
    expect(narrower.apiKey.runCaps).toEqual({ ...keyCaps, tokenBudget: 5_000 });
    const unasked = (await gql(capped, KEY, { input: { name: "as it is" } })).createApiKey;
    expect(unasked.apiKey.runCaps).toEqual(keyCaps);

    // A token minted without caps by the capped key inherits them; so does the key's own admission.
    const { token } = await mint(capped);
    const q = { workspaceId: w, question: "q" };
    expect(await admit(token, { ...q, limits: { maxTurns: 6 } })).toEqual(refusal("limits.maxTurns", capMessage("5", "maxTurns")));
    expect(await admit(token, { ...q, agent: "analyst" })).toMatchObject({ __typename: "ValidationError", issues: [{ field: "agent" }] });
    expect(await admit(capped, { ...q, priority: 1 })).toEqual(refusal("priority", capMessage("0", "maxPriority")));
    expect(await admit(narrower.secret, { ...q, limits: { tokenBudget: 5_001 } })).toEqual(refusal("limits.tokenBudget", capMessage("5,000", "tokenBudget")));
    expect(await runsCount(key)).toBe(0);
    expect((await admit(token, q)).run.limits.maxTurns).toBe(5);
    // A narrower token of the capped key stays narrower.
    const { token: narrowToken } = await mint(capped, { maxTurns: 2 });
    expect((await admit(narrowToken, q)).run.limits.maxTurns).toBe(2);
  });

  it("lets a capped key see and revoke only keys at least as tightly capped, so it cannot lock its owner out", async () => {
    const { key } = await owner();
    const KEYS = `{ apiKeys(first: 50) { edges { node { name } } } }`;
    const REVOKE = `mutation($id: ID!) { revokeApiKey(input: { id: $id }) { __typename } }`;
    const make = async (by: string, name: string, runCaps?: Record<string, unknown>) =>
      (await gql(by, KEY, { input: { name, runCaps } })).createApiKey.apiKey.id as string;
    const uncapped = await make(key, "uncapped");
    const otherAgents = await make(key, "other agents", { agents: ["analyst"], maxTurns: 5 });
    const looser = await make(key, "looser", { agents: ["researcher"], maxTurns: 50 });
    const cappedId = await make(key, "capped", { agents: ["researcher"], maxTurns: 5 });
    const capped = (await gql(key, KEY, { input: { name: "capped 2", runCaps: { agents: ["researcher"], maxTurns: 5 } } })).createApiKey.secret as string;
    const tighter = await make(capped, "tighter", { maxTurns: 2 });
    const names = (await gql(capped, KEYS)).apiKeys.edges.map((edge: { node: { name: string } }) => edge.node.name).sort();
    // "other agents" has an agents cap and a maxTurns as tight: listed; its agents are checked on revocation.
    expect(names).toEqual(["capped", "capped 2", "other agents", "tighter"]);
    for (const id of [uncapped, looser, otherAgents]) expect((await gql(capped, REVOKE, { id })).revokeApiKey.__typename).toBe("NotFoundError");
    for (const id of [tighter, cappedId]) expect((await gql(capped, REVOKE, { id })).revokeApiKey.__typename).toBe("RevokeApiKeySuccess");
    // The owner's full key still works.
    expect((await gql(key, KEYS)).apiKeys.edges.length).toBe(7);
  });

  it("fires a schedule made with a capped key within its caps; the key cannot trigger or resume a wider one", async () => {
    const { key, w, mint } = await owner();
    const capped = (await gql(key, KEY, { input: { name: "capped", runCaps: { agents: ["researcher"], maxTurns: 5 } } })).createApiKey.secret as string;
    const CREATE = `mutation($input: CreateScheduleInput!) { createSchedule(input: $input) {
      __typename ... on CreateScheduleSuccess { schedule { id ${CAPS} } } ... on ValidationError { issues { field message } } ... on Error { message } } }`;
    const UPDATE = `mutation($input: UpdateScheduleInput!) { updateSchedule(input: $input) {
      __typename ... on UpdateScheduleSuccess { schedule { id ${CAPS} } } ... on ValidationError { issues { field message } } } }`;
    const TRIGGER = `mutation($id: ID!) { triggerSchedule(input: { id: $id }) {
      __typename ... on TriggerScheduleSuccess { fire { status run { limits { maxTurns } } } } ... on ValidationError { issues { field message } } } }`;
    const RESUME = `mutation($id: ID!) { resumeSchedule(input: { id: $id }) { __typename ... on ValidationError { issues { field message } } } }`;
    const fires = async (id: string) =>
      (await gql(key, `query($id: ID!) { node(id: $id) { ... on Schedule { fires { totalCount } } } }`, { id })).node.fires.totalCount as number;
    const base = { workspaceId: w, question: "weekly", intervalSeconds: 3600, overlap: "ENQUEUE", catchUp: "ALL" };

    expect((await gql(capped, CREATE, { input: { ...base, limits: { maxTurns: 6 } } })).createSchedule).toEqual(
      refusal("limits.maxTurns", capMessage("5", "maxTurns")),
    );
    expect((await gql(capped, CREATE, { input: { ...base, agent: "analyst" } })).createSchedule).toMatchObject({
      __typename: "ValidationError",
      issues: [{ field: "agent" }],
    });
    // An access token makes no schedules at all.
    const { token } = await mint(key);
    expect((await gql(token, CREATE, { input: base })).createSchedule.__typename).toBe("ForbiddenError");

    const schedule = (await gql(capped, CREATE, { input: base })).createSchedule.schedule;
    expect(schedule.runCaps).toEqual({ ...NO_CAPS, agents: ["researcher"], maxTurns: 5 });
    // triggerSchedule by the capped key, and by the uncapped owner: within the caps stored with the schedule.
    for (const by of [capped, key]) {
      const fired = (await gql(by, TRIGGER, { id: schedule.id })).triggerSchedule;
      expect(fired).toEqual({ __typename: "TriggerScheduleSuccess", fire: { status: "ADMITTED", run: { limits: { maxTurns: 5 } } } });
    }
    // Its timer too: a fire due (at the schedule's creation, an hour before its next) is admitted within the caps.
    const prisma = t!.app.db.prisma;
    const where = { id: idOfType(schedule.id, "Schedule")! };
    const { createdAt } = await prisma.schedule.findUniqueOrThrow({ where, select: { createdAt: true } });
    await prisma.schedule.update({ where, data: { nextFireAt: createdAt } });
    expect(await t!.app.services.schedules.fireDue()).toBe(1);
    const timed = await prisma.run.findMany({ where: { scheduleId: idOfType(schedule.id, "Schedule")! }, select: { maxTurns: true } });
    expect(timed.map((run) => run.maxTurns)).toEqual([5, 5, 5]);

    // A schedule the owner made wider: the capped key can neither trigger nor resume it; nothing fires.
    const wide = (await gql(key, CREATE, { input: { ...base, limits: { maxTurns: 50 } } })).createSchedule.schedule;
    expect(wide.runCaps).toBeNull();
    expect((await gql(capped, TRIGGER, { id: wide.id })).triggerSchedule).toEqual(refusal("limits.maxTurns", capMessage("5", "maxTurns")));
    await gql(key, `mutation($id: ID!) { pauseSchedule(input: { id: $id }) { __typename } }`, { id: wide.id });
    expect((await gql(capped, RESUME, { id: wide.id })).resumeSchedule).toEqual(refusal("limits.maxTurns", capMessage("5", "maxTurns")));
    expect(await fires(wide.id)).toBe(0);
    // Updated by the capped key, it must fit its caps, and takes them.
    expect((await gql(capped, UPDATE, { input: { id: wide.id, question: "changed" } })).updateSchedule).toEqual(
      refusal("limits.maxTurns", capMessage("5", "maxTurns")),
    );
    const fitted = (await gql(capped, UPDATE, { input: { id: wide.id, limits: null } })).updateSchedule.schedule;
    expect(fitted.runCaps).toEqual({ ...NO_CAPS, agents: ["researcher"], maxTurns: 5 });
    expect((await gql(capped, RESUME, { id: wide.id })).resumeSchedule.__typename).toBe("ResumeScheduleSuccess");
    expect((await gql(key, TRIGGER, { id: wide.id })).triggerSchedule.fire.run.limits).toEqual({ maxTurns: 5 });
    // Updated by the uncapped owner, its caps go.
    expect((await gql(key, UPDATE, { input: { id: wide.id, limits: { maxTurns: 50 } } })).updateSchedule.schedule.runCaps).toBeNull();
  });
});
