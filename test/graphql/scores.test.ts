// Scores (issue 39) through the API: configs and the values each kind allows, scores on runs,
// publication versions and checkpoint revisions, idempotency keys, a run's summary, deletion,
// another principal's objects (NotFound, never scored), and what keys and access tokens may do.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { backends } from "../support/databases.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Data = Record<string, any>;

const PAYLOAD = "__typename ... on Error { message } ... on ValidationError { issues { field message } }";
const CONFIG = `mutation($input: CreateScoreConfigInput!) { createScoreConfig(input: $input) { ${PAYLOAD} ... on CreateScoreConfigSuccess { config { id name kind min max categories } } } }`;
const SCORE = `mutation($input: CreateScoreInput!) { createScore(input: $input) { ${PAYLOAD}
  ... on CreateScoreSuccess { score { id configName value label comment source credential targetId createdBy { name } target { __typename } } } } }`;
const DELETE = `mutation($id: ID!) { deleteScore(input: { id: $id }) { ${PAYLOAD} ... on DeleteScoreSuccess { deletedScoreId } } }`;
const RUN_SCORES = `query($id: ID!) { run(id: $id) { scores(first: 10) { totalCount edges { node { configName value label source } } }
  scoreSummary { configName count mean labelCounts { label count } } } }`;

describe.each(backends)("scores on %s", (backend) => {
  let t: TestApp;
  let alice: string;
  let bob: string;
  beforeAll(async () => {
    t = await startTestApp(backend, { authRequired: true });
    alice = await t.createPrincipal("Alice");
    bob = await t.createPrincipal("Bob");
  });
  afterAll(async () => t?.close());

  const gql = async (bearer: string, query: string, variables: Record<string, unknown> = {}): Promise<Data> => {
    const response = await t.app.yoga.fetch(
      new Request("http://127.0.0.1/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
        body: JSON.stringify({ query, variables }),
      }),
    );
    const body = (await response.json()) as { data?: Data; errors?: { message: string }[] };
    if (body.errors) throw new Error(body.errors.map((e) => e.message).join("; "));
    return body.data!;
  };
  const config = async (key: string, input: Record<string, unknown>) => (await gql(key, CONFIG, { input })).createScoreConfig;
  const score = async (key: string, input: Record<string, unknown>) => (await gql(key, SCORE, { input: { source: "HUMAN", ...input } })).createScore;
  const admit = async (key: string, extra = "") =>
    (await gql(key, `mutation { admitRun(input: { question: "q" ${extra} }) { ... on AdmitRunSuccess { run { id } } } }`)).admitRun.run.id as string;
  const publish = async (key: string) =>
    (await gql(key, `mutation { publishVersion(input: { title: "T", content: "c" }) { ... on PublishVersionSuccess { version { id } } } }`)).publishVersion
      .version.id as string;
  let seq = 0;
  const unique = (name: string) => `${name}-${(seq += 1)}`;

  it("checks a config's settings, kind by kind, and is idempotent for the same name and settings", async () => {
    const table: [Record<string, unknown>, string[]][] = [
      [{ kind: "NUMERIC", min: 1, max: 5 }, []],
      [{ kind: "NUMERIC" }, []],
      [{ kind: "NUMERIC", min: 0 }, []],
      [{ kind: "NUMERIC", min: 5, max: 5 }, ["max"]],
      [{ kind: "NUMERIC", min: 1, max: 5, categories: ["a"] }, ["categories"]],
      [{ kind: "CATEGORICAL", categories: ["good", "bad"] }, []],
      [{ kind: "CATEGORICAL" }, ["categories"]],
      [{ kind: "CATEGORICAL", categories: [] }, ["categories"]],
      [{ kind: "CATEGORICAL", categories: ["good", "good"] }, ["categories"]],
      [{ kind: "CATEGORICAL", categories: ["good", "  "] }, ["categories.1"]],
      [{ kind: "CATEGORICAL", categories: ["a"], min: 1 }, ["min"]],
      [{ kind: "BOOLEAN" }, []],
      [{ kind: "BOOLEAN", max: 1 }, ["max"]],
      [{ kind: "BOOLEAN", categories: ["yes"] }, ["categories"]],
    ];
    for (const [settings, fields] of table) {
      const answer = await config(alice, { name: unique("cfg"), ...settings });
      if (fields.length === 0) expect(answer.__typename, JSON.stringify(settings)).toBe("CreateScoreConfigSuccess");
      else
        expect(
          answer.issues?.map((i: { field: string }) => i.field),
          JSON.stringify(settings),
        ).toEqual(fields);
    }
    expect((await config(alice, { name: " ", kind: "BOOLEAN" })).issues[0].field).toBe("name");

    const first = await config(alice, { name: "accuracy", kind: "NUMERIC", min: 1, max: 5, description: "1 poor, 5 exact" });
    const again = await config(alice, { name: "accuracy", kind: "NUMERIC", min: 1, max: 5, description: "1 poor, 5 exact" });
    expect(again.config.id).toBe(first.config.id);
    const other = await config(alice, { name: "accuracy", kind: "NUMERIC", min: 0, max: 10 });
    expect(other).toMatchObject({ __typename: "ValidationError", issues: [{ field: "name" }] });
    // Names are per principal: Bob's "accuracy" is his own.
    expect((await config(bob, { name: "accuracy", kind: "BOOLEAN" })).config.kind).toBe("BOOLEAN");
    const listed = await gql(alice, "{ scoreConfigs(first: 100) { totalCount edges { node { name } } } }");
    expect(listed.scoreConfigs.edges.map((e: Data) => e.node.name)).toContain("accuracy");
    expect((await gql(bob, "{ scoreConfigs { totalCount } }")).scoreConfigs.totalCount).toBe(1);
  });

  it("checks each value against its config, and summarises a run's scores per config", async () => {
    const [numeric, verdict, correct] = [unique("stars"), unique("verdict"), unique("correct")];
    await config(alice, { name: numeric, kind: "NUMERIC", min: 1, max: 5 });
    await config(alice, { name: verdict, kind: "CATEGORICAL", categories: ["right", "wrong", "partly"] });
    await config(alice, { name: correct, kind: "BOOLEAN" });
    const run = await admit(alice);
    const refused: [Record<string, unknown>, string][] = [
      [{ configName: numeric, value: 0 }, "value"],
      [{ configName: numeric, value: 6 }, "value"],
      [{ configName: numeric }, "value"],
      [{ configName: numeric, value: 3, label: "three" }, "label"],
      [{ configName: verdict, label: "maybe" }, "label"],
      [{ configName: verdict }, "label"],
      [{ configName: verdict, label: "right", value: 1 }, "value"],
      [{ configName: correct, value: 0.5 }, "value"],
      [{ configName: correct, label: "yes" }, "label"],
      [{ configName: correct, value: 1, label: "false" }, "label"],
      [{ configName: correct }, "value"],
    ];
    for (const [input, field] of refused) {
      const answer = await score(alice, { targetId: run, ...input });
      expect(answer, JSON.stringify(input)).toMatchObject({ __typename: "ValidationError", issues: [{ field }] });
    }
    expect(await score(alice, { targetId: run, configName: "no such config", value: 1 })).toMatchObject({ __typename: "NotFoundError" });

    const made = [
      await score(alice, { targetId: run, configName: numeric, value: 4, comment: "mostly exact" }),
      await score(alice, { targetId: run, configName: numeric, value: 1.5, source: "MODEL" }),
      await score(alice, { targetId: run, configName: verdict, label: "right" }),
      await score(alice, { targetId: run, configName: verdict, label: "right", source: "CODE" }),
      await score(alice, { targetId: run, configName: verdict, label: "partly" }),
      await score(alice, { targetId: run, configName: correct, label: "true" }),
      await score(alice, { targetId: run, configName: correct, value: 0 }),
      await score(alice, { targetId: run, configName: correct, value: 1, label: "true" }),
    ];
    expect(made.map((m) => m.__typename)).toEqual(Array(8).fill("CreateScoreSuccess"));
    expect(made[0].score).toMatchObject({ configName: numeric, value: 4, label: null, comment: "mostly exact", targetId: run, createdBy: { name: "Alice" } });
    expect(made[0].score.credential).toMatch(/^key:/);
    expect(made[0].score.target).toEqual({ __typename: "Run" });
    expect(made[6].score).toMatchObject({ value: 0, label: "false" });

    const { run: read } = await gql(alice, RUN_SCORES, { id: run });
    expect(read.scores.totalCount).toBe(8);
    expect(read.scores.edges[0].node).toMatchObject({ configName: correct, value: 1, label: "true" });
    const byName = Object.fromEntries(read.scoreSummary.map((s: Data) => [s.configName, s]));
    expect(byName[numeric]).toEqual({ configName: numeric, count: 2, mean: 2.75, labelCounts: [] });
    expect(byName[verdict]).toEqual({
      configName: verdict,
      count: 3,
      mean: null,
      labelCounts: [
        { label: "right", count: 2 },
        { label: "partly", count: 1 },
      ],
    });
    expect(byName[correct].count).toBe(3);
    expect(byName[correct].mean).toBeCloseTo(2 / 3);
    expect(byName[correct].labelCounts).toEqual([
      { label: "true", count: 2 },
      { label: "false", count: 1 },
    ]);

    // Deleting a score takes it out of the list and the summary; deleting it again is NotFound.
    expect((await gql(alice, DELETE, { id: made[1].score.id })).deleteScore).toEqual({ __typename: "DeleteScoreSuccess", deletedScoreId: made[1].score.id });
    expect((await gql(alice, DELETE, { id: made[1].score.id })).deleteScore.__typename).toBe("NotFoundError");
    const after = (await gql(alice, RUN_SCORES, { id: run })).run;
    expect(after.scores.totalCount).toBe(7);
    expect(after.scoreSummary.find((s: Data) => s.configName === numeric)).toMatchObject({ count: 1, mean: 4 });
  });

  it("returns the same score for the same idempotency key, even sent concurrently, and refuses the key for another request", async () => {
    const name = unique("stars");
    await config(alice, { name, kind: "NUMERIC", min: 1, max: 5 });
    const version = await publish(alice);
    const input = { targetId: version, configName: name, value: 5, idempotencyKey: "review-42" };
    const answers = await Promise.all(Array.from({ length: 5 }, () => score(alice, input)));
    expect(new Set(answers.map((a) => a.score.id)).size).toBe(1);
    const pv = await gql(
      alice,
      `query($id: ID!) { node(id: $id) { ... on PublicationVersion { scores { totalCount edges { node { createdBy { name } value } } } } } }`,
      {
        id: version,
      },
    );
    expect(pv.node.scores).toEqual({ totalCount: 1, edges: [{ node: { createdBy: { name: "Alice" }, value: 5 } }] });
    expect(await score(alice, { ...input, value: 4 })).toMatchObject({ __typename: "IdempotencyConflictError" });
    // Keys are per principal.
    await config(bob, { name, kind: "NUMERIC" });
    const bobs = await publish(bob);
    expect((await score(bob, { ...input, targetId: bobs })).__typename).toBe("CreateScoreSuccess");
  });

  it("answers NotFound for another principal's run, version, checkpoint revision and score, and never shows them", async () => {
    const name = unique("ok");
    await config(alice, { name, kind: "BOOLEAN" });
    await config(bob, { name, kind: "BOOLEAN" });
    const run = await admit(alice);
    const version = await publish(alice);
    const workspace = (
      await gql(alice, `mutation { createWorkspace(input: { title: "W", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`)
    ).createWorkspace.workspace.id;
    const checkpoint = await gql(
      alice,
      `mutation($w: ID!) { updateCheckpoint(input: { workspaceId: $w, expectedRevision: 0, summary: "s", questions: [] }) { __typename ... on UpdateCheckpointSuccess { checkpoint { id } } } }`,
      { w: workspace },
    );
    const checkpointId = checkpoint.updateCheckpoint.checkpoint.id as string;
    const mine = await score(alice, { targetId: checkpointId, configName: name, value: 1 });
    expect(mine.score.target.__typename).toBe("Checkpoint");

    for (const target of [run, version, checkpointId, encodeGlobalId("Span", "no-such-span")]) {
      expect(await score(bob, { targetId: target, configName: name, value: 1 }), target).toMatchObject({ __typename: "NotFoundError" });
    }
    expect(await score(bob, { targetId: encodeGlobalId("Workspace", workspace), configName: name, value: 1 })).toMatchObject({
      __typename: "ValidationError",
      issues: [{ field: "targetId" }],
    });
    expect((await gql(bob, DELETE, { id: mine.score.id })).deleteScore.__typename).toBe("NotFoundError");
    expect((await gql(bob, `query($id: ID!) { node(id: $id) { id } }`, { id: mine.score.id })).node).toBeNull();
    const theirs = await gql(alice, `query($id: ID!) { node(id: $id) { ... on Checkpoint { scores { totalCount } } } }`, { id: checkpointId });
    expect(theirs.node.scores.totalCount).toBe(1);
  });

  it("lets a key or token with SCORE score, and READ only read; a token deletes only the scores it made", async () => {
    const name = unique("ok");
    await config(alice, { name, kind: "BOOLEAN" });
    const run = await admit(alice);
    const keyOf = async (scopes: string[]) =>
      (
        await gql(alice, `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { ... on CreateApiKeySuccess { secret } } }`, {
          input: { name: "k", scopes },
        })
      ).createApiKey.secret as string;
    const reader = await keyOf(["READ"]);
    expect(await score(reader, { targetId: run, configName: name, value: 1 })).toMatchObject({ __typename: "ForbiddenError" });
    expect(await config(reader, { name: unique("x"), kind: "BOOLEAN" })).toMatchObject({ __typename: "ForbiddenError" });
    const scorer = await keyOf(["READ", "SCORE"]);
    const byKey = await score(scorer, { targetId: run, configName: name, value: 1 });
    expect(byKey.__typename).toBe("CreateScoreSuccess");

    const mint = async (operations: string[]) =>
      (
        await gql(alice, `mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { ... on CreateAccessTokenSuccess { token } } }`, {
          input: { grants: [{ resourceId: run, operations }] },
        })
      ).createAccessToken.token as string;
    const readToken = await mint(["READ"]);
    expect((await gql(readToken, RUN_SCORES, { id: run })).run.scores.totalCount).toBe(1);
    expect(await score(readToken, { targetId: run, configName: name, value: 0 })).toMatchObject({ __typename: "NotFoundError" });
    expect((await gql(readToken, DELETE, { id: byKey.score.id })).deleteScore.__typename).toBe("NotFoundError");
    const scoreToken = await mint(["READ", "SCORE"]);
    const byToken = await score(scoreToken, { targetId: run, configName: name, value: 0 });
    expect(byToken.score.credential).toMatch(/^token:/);
    // A token scores only what it was granted, and creates no configs.
    const otherRun = await admit(alice);
    expect(await score(scoreToken, { targetId: otherRun, configName: name, value: 0 })).toMatchObject({ __typename: "NotFoundError" });
    expect(await config(scoreToken, { name: unique("x"), kind: "BOOLEAN" })).toMatchObject({ __typename: "ForbiddenError" });
    // A token deletes only the scores it made: the key's HUMAN score stays, as does one another token made.
    expect((await gql(scoreToken, DELETE, { id: byKey.score.id })).deleteScore.__typename).toBe("NotFoundError");
    const otherToken = await mint(["READ", "SCORE"]);
    expect((await gql(otherToken, DELETE, { id: byToken.score.id })).deleteScore.__typename).toBe("NotFoundError");
    expect((await gql(scoreToken, RUN_SCORES, { id: run })).run.scores.totalCount).toBe(2);
    expect((await gql(scoreToken, DELETE, { id: byToken.score.id })).deleteScore).toEqual({
      __typename: "DeleteScoreSuccess",
      deletedScoreId: byToken.score.id,
    });
    expect((await gql(scorer, DELETE, { id: byKey.score.id })).deleteScore.__typename).toBe("DeleteScoreSuccess");
    expect((await gql(alice, RUN_SCORES, { id: run })).run.scores.totalCount).toBe(0);
  });
});
