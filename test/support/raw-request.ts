// One GraphQL request to an app in process, sent as a client would send it (its key in the
// header), answered as the JSON the client reads: data and errors as they are, for tests that
// look at both.
import type { App } from "../../src/compose/app.js";

export type RawAnswer = { data?: Record<string, any> | null; errors?: { message: string; extensions?: { code?: string } }[] };

export async function rawRequest(app: App, bearer: string, query: string, variables: Record<string, unknown> = {}): Promise<RawAnswer> {
  const response = await app.yoga.fetch(
    new Request("http://127.0.0.1/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
      body: JSON.stringify({ query, variables }),
    }),
  );
  return (await response.json()) as RawAnswer;
}
