// A GET request's `variables` and `extensions` are JSON text in its URL: text that is not JSON is
// the client's mistake, answered with 400 and an error naming the parameter (not 500 and an
// error in the log), over plain HTTP and SSE.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe("GET parameters that are not JSON", () => {
  let t: TestApp;
  const logged: string[] = [];
  const errorLines = () => logged.filter((line) => (JSON.parse(line) as { level: string }).level === "error");
  beforeAll(async () => {
    t = await startTestApp("pglite", { listen: true, logger: createLogger("debug", (line) => logged.push(line)) });
  }, 60_000);
  afterAll(async () => t?.close());

  const get = async (parameters: Record<string, string>, accept: string) => {
    const url = new URL(t.server!.url);
    for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
    const response = await fetch(url, { headers: { accept } });
    return { status: response.status, text: await response.text() };
  };

  it.each([
    ["variables", "application/graphql-response+json"],
    ["variables", "application/json"],
    ["variables", "text/event-stream"],
    ["extensions", "application/graphql-response+json"],
    ["extensions", "application/json"],
    ["extensions", "text/event-stream"],
  ])("answers `%s` that is not JSON with 400 naming it, accepting %s, logging no error", async (name, accept) => {
    const before = errorLines().length;
    const answer = await get({ query: "{ __typename }", [name]: "{not json" }, accept);
    expect(answer.status).toBe(400);
    expect(answer.text).toContain(`"message":"The URL parameter \`${name}\` is not JSON."`);
    expect(answer.text).toContain('"code":"BAD_REQUEST"');
    expect(errorLines().length).toBe(before);
  });

  it("still runs a GET whose parameters are JSON, and one without them", async () => {
    const withJson = await get(
      { query: "query Q($a: Boolean!) { __typename @include(if: $a) }", variables: '{"a":true}', extensions: "{}" },
      "application/graphql-response+json",
    );
    expect(withJson).toEqual({ status: 200, text: '{"data":{"__typename":"Query"}}' });
    const plain = await get({ query: "{ __typename }", operationName: "" }, "application/json");
    expect(plain).toEqual({ status: 200, text: '{"data":{"__typename":"Query"}}' });
  });
});
