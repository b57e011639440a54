// Queries and mutations run compiled (server/compiled-execution.ts). A compiled plan must answer
// exactly as graphql-js's own executor does: the same data, the same nulls, the same errors at
// the same paths, for unions, interfaces, connections, fragments, aliases, variables and their
// defaults. Each document below runs both ways over the same context; the answers must be equal.
// One wording differs, by design of the compiler: a variable of the wrong type is refused with
// the same error at the same place, its message adding the type expected (which also shows that
// the app's executor is the compiled one).
import { execute, type ExecutionResult, parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schema } from "../../src/graphql/schema.js";
import { admit, createArtifact, createWorkspace, publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const DOCUMENTS: Record<string, string> = {
  "a workspace with its goal and a page of links to every kind of target": /* GraphQL */ `
    query ($id: ID!, $first: Int = 5) {
      workspace(id: $id) {
        id title status goal { version statement }
        links(first: $first) {
          pageInfo { hasNextPage endCursor }
          edges { cursor node { kind target { __typename ... on Run { id status question } ... on Publication { id latest: latestVersion { version content } } ... on Artifact { id name } } } }
        }
      }
    }`,
  "a node by global id, through fragments on an interface": /* GraphQL */ `
    query ($id: ID!) { node(id: $id) { __typename id ...W } missing: node(id: "bm90aGluZw==") { id } }
    fragment W on Workspace { title goalVersions(first: 2) { edges { node { version } } } }`,
  "an error union: bad input is data, not an error": /* GraphQL */ `
    mutation { createWorkspace(input: { title: "", goal: "" }) { __typename ... on ValidationError { message } } }`,
  "a null for an id of another kind, and a list with its page size": /* GraphQL */ `
    query ($id: ID!) { workspace(id: $id) { id } workspaces(first: 3) { edges { node { id title } } } }`,
  introspection: /* GraphQL */ `{ __schema { queryType { name } } __type(name: "LinkTarget") { kind possibleTypes { name } } }`,
};

const WRONG_VARIABLE = /* GraphQL */ `query ($id: ID!, $first: Int) { workspace(id: $id) { links(first: $first) { edges { cursor } } } }`;

describe("compiled execution", () => {
  let t: TestApp;
  const variables: Record<string, Record<string, unknown>> = {};

  beforeAll(async () => {
    t = await startTestApp("pglite");
    const workspace = await createWorkspace(t.client);
    for (let i = 0; i < 3; i += 1) await admit(t.client, { workspaceId: workspace.id, question: `question ${i}` });
    const run = await admit(t.client, { workspaceId: workspace.id, question: "the one that publishes" });
    await publish(t.client, { title: "Findings", content: "Cell capacity doubles.", originRunId: run.run.id });
    const artifact = await createArtifact(t.client);
    await t.client.request(
      parse(`mutation ($input: LinkToWorkspaceInput!) { linkToWorkspace(input: $input) { __typename } }`) as never,
      { input: { workspaceId: workspace.id, targetId: artifact.id } } as never,
    );
    const id = workspace.id;
    Object.assign(variables, {
      "a workspace with its goal and a page of links to every kind of target": { id },
      "a node by global id, through fragments on an interface": { id },
      "a null for an id of another kind, and a list with its page size": { id: run.run.id },
    });
  });
  afterAll(() => t.close());

  it.each(Object.keys(DOCUMENTS))("answers as graphql-js does: %s", async (name) => {
    const { interpreted, viaCompiled } = await bothWays(DOCUMENTS[name]!, variables[name] ?? {});
    expect(plain(viaCompiled)).toEqual(plain(interpreted));
    // Each document means something: it has data or the errors graphql-js gives it.
    expect(interpreted.data ?? interpreted.errors).toBeTruthy();
  });

  it("refuses a variable of the wrong type as graphql-js does, naming the type expected", async () => {
    const { interpreted, viaCompiled } = await bothWays(WRONG_VARIABLE, {
      id: variables["a node by global id, through fragments on an interface"]!.id,
      first: "twenty",
    });
    expect(plain(interpreted)).toEqual({
      errors: [
        { message: 'Variable "$first" got invalid value "twenty"; Int cannot represent non-integer value: "twenty"', locations: [{ line: 1, column: 18 }] },
      ],
    });
    expect(plain(viaCompiled)).toEqual({
      errors: [
        {
          message: 'Variable "$first" got invalid value "twenty"; Expected type Int; Int cannot represent non-integer value: "twenty"',
          locations: [{ line: 1, column: 18 }],
        },
      ],
    });
  });

  /** The document run by graphql-js's executor and by the app's (compiled), each over a fresh context of the app. */
  async function bothWays(text: string, variableValues: Record<string, unknown>) {
    const document = parse(text);
    const { contextFactory, execute: compiled } = t.app.yoga.getEnveloped({ request: new Request("http://localhost/graphql") });
    const interpreted = (await execute({ schema, document, variableValues, contextValue: await contextFactory() })) as ExecutionResult;
    const viaCompiled = (await compiled({ schema, document, variableValues, contextValue: await contextFactory() })) as ExecutionResult;
    return { interpreted, viaCompiled };
  }
});

/** What a client receives: the JSON of the result (errors as message, path and locations). */
function plain(result: ExecutionResult): unknown {
  return JSON.parse(JSON.stringify({ data: result.data, errors: result.errors?.map(({ message, path, locations }) => ({ message, path, locations })) }));
}
