// Text PostgreSQL cannot store as given (a NUL, or an unpaired UTF-16 surrogate) is refused in
// any string argument before a resolver runs: as a typed ValidationError where the field has one,
// else as a BAD_USER_INPUT error. Nothing is written either way.
import { parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DossierRequestError } from "../../sdk/client.js";
import { AdmitRunDocument, CreateWorkspaceDocument, RunDocument, WorkspacesDocument } from "../../sdk/generated/graphql.js";
import { NESTING_MAX } from "../../src/domain/text/unstorable-text.js";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { createLogger } from "../../src/logger.js";
import { backends } from "../support/databases.js";
import { createWorkspace } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const NUL_MESSAGE = "contains a NUL character (U+0000)";
const SURROGATE_MESSAGE = "contains an unpaired UTF-16 surrogate";

// A query field without an error union: the guard's failure must be a GraphQL error.
const RunByIdDocument = parse("query RunById($id: ID!) { run(id: $id) { id } }");

describe.each(backends)("text input guard on %s", (backend) => {
  let t: TestApp;
  const logged: string[] = [];
  beforeAll(async () => {
    t = await startTestApp(backend, { logger: createLogger("debug", (line) => logged.push(line)) });
  });
  const errorLines = () => logged.filter((line) => (JSON.parse(line) as { level: string }).level === "error");
  afterAll(async () => t?.close());

  const counts = async () => ({
    workspaces: await t.app.db.prisma.workspace.count(),
    goalVersions: await t.app.db.prisma.goalVersion.count(),
    runs: await t.app.db.prisma.run.count(),
    conversations: await t.app.db.prisma.conversation.count(),
  });
  const workspaceTitles = async () => (await t.client.request(WorkspacesDocument, { first: 200 })).workspaces.edges.map((edge) => edge.node.title);

  it.each([
    ["a NUL in the title", { title: "EU\u0000batteries", goal: "Map capacity" }, "input.title", NUL_MESSAGE],
    ["a lone high surrogate in the goal", { title: "EU batteries", goal: "Map \uD800 capacity" }, "input.goal", SURROGATE_MESSAGE],
    ["a lone low surrogate at the end of the goal", { title: "EU batteries", goal: "Map capacity\uDC00" }, "input.goal", SURROGATE_MESSAGE],
    ["a reversed surrogate pair in the goal", { title: "EU batteries", goal: "\uDE00\uD83D" }, "input.goal", SURROGATE_MESSAGE],
  ])("answers %s with a ValidationError naming the field, writing nothing", async (_name, input, field, message) => {
    const before = await counts();
    const titlesBefore = await workspaceTitles();
    const result = await t.client.request(CreateWorkspaceDocument, { input });
    expect(result.createWorkspace).toMatchObject({ __typename: "ValidationError", issues: [{ field, message }] });
    expect(await counts()).toEqual(before);
    expect(await workspaceTitles()).toEqual(titlesBefore);
  });

  it("names the nested path of an offending string in a list of input objects", async () => {
    const workspace = await createWorkspace(t.client);
    const before = await counts();
    const result = await t.client.request(AdmitRunDocument, {
      input: {
        workspaceId: workspace.id,
        question: "Which cell makers expand?",
        materials: [
          { publicationId: encodeGlobalId("Publication", "fine"), version: 1 },
          { publicationId: `${encodeGlobalId("Publication", "x")}\u0000`, version: 1 },
        ],
      },
    });
    expect(result.admitRun).toMatchObject({
      __typename: "ValidationError",
      issues: [{ field: "input.materials.1.publicationId", message: NUL_MESSAGE }],
    });
    expect(await counts()).toEqual(before);
  });

  // JSON.parse takes any depth, but a walk that recurses overflows the stack (an internal error),
  // as would JSON.stringify and PostgreSQL's jsonb further on.
  it("refuses JSON nested 200,000 deep with a ValidationError naming the field, logging no error", async () => {
    const workspace = await createWorkspace(t.client);
    const before = await counts();
    const errorsBefore = errorLines().length;
    const depth = 200_000;
    const metadata = `${'{"a":'.repeat(depth)}"x"${"}".repeat(depth)}`;
    const input = `{"workspaceId":${JSON.stringify(workspace.id)},"question":"Which cell makers expand?","metadata":${metadata}}`;
    const response = await t.app.yoga.fetch(
      new Request("http://dossier.test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: `{"query":"mutation ($input: AdmitRunInput!) { admitRun(input: $input) { __typename ... on ValidationError { issues { field message } } } }","variables":{"input":${input}}}`,
      }),
    );
    const body = (await response.json()) as { data?: { admitRun: { __typename: string; issues: { field: string; message: string }[] } }; errors?: unknown };
    expect(body.errors).toBeUndefined();
    expect(body.data?.admitRun.__typename).toBe("ValidationError");
    const [issue] = body.data!.admitRun.issues;
    // The path to the first object nested too deeply: input.metadata, then its keys.
    expect(issue?.field).toBe(["input", "metadata", ...Array<string>(NESTING_MAX - 2).fill("a")].join("."));
    expect(issue?.message).toBe(`is nested deeper than ${NESTING_MAX} levels of lists and objects`);
    expect(await counts()).toEqual(before);
    expect(errorLines().length).toBe(errorsBefore);
  });

  it("refuses a NUL written as an escape in a GraphQL string literal, not only in variables", async () => {
    const before = await counts();
    const literal = parse(
      'mutation { createWorkspace(input: { title: "a\\u0000b", goal: "g" }) { __typename ... on ValidationError { issues { field message } } } }',
    );
    const result = (await t.client.request(literal)) as { createWorkspace: unknown };
    expect(result.createWorkspace).toEqual({
      __typename: "ValidationError",
      issues: [{ field: "input.title", message: NUL_MESSAGE }],
    });
    expect(await counts()).toEqual(before);
  });

  it.each([
    ["run(id:)", RunByIdDocument, "\u0000"],
    // node(id:) decodes its global id before the resolver; the guard still sees what was sent.
    ["node(id:)", RunDocument, `${encodeGlobalId("Run", "x")}\uD800`],
  ])("answers a field without an error union, %s, with BAD_USER_INPUT", async (_name, document, id) => {
    const error = await t.client.request(document, { id }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DossierRequestError);
    const [first] = (error as DossierRequestError).errors;
    expect(first?.message).not.toBe("Unexpected error.");
    expect(first?.message).toMatch(/^id contains (a NUL character|an unpaired UTF-16 surrogate)/);
    expect(first?.extensions).toMatchObject({ code: "BAD_USER_INPUT", field: "id" });
  });

  it("refuses a subscription's argument before it subscribes", async () => {
    const listening = t.listeners();
    const response = await t.app.yoga.fetch(
      new Request("http://dossier.test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({
          query: "subscription ($runId: ID!) { runEvents(runId: $runId) { status } }",
          variables: { runId: "\u0000" },
        }),
      }),
    );
    const body = await response.text();
    expect(body).toContain('"code":"BAD_USER_INPUT"');
    expect(body).toContain('"field":"runId"');
    expect(t.listeners()).toBe(listening);
  });

  it("accepts astral characters (proper surrogate pairs) and ordinary text", async () => {
    const title = "Batteries 😀 — 研究 ñ";
    const goal = "Map 𝔼𝕌 cell makers' capacity\twith tabs\nand newlines";
    const result = await t.client.request(CreateWorkspaceDocument, { input: { title, goal } });
    expect(result.createWorkspace).toMatchObject({
      __typename: "CreateWorkspaceSuccess",
      workspace: { title, goal: { statement: goal } },
    });
    expect(await workspaceTitles()).toContain(title);
  });
});
