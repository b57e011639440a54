// A GET request carries its operation in the URL: `variables` and `extensions` as JSON text. Yoga's
// GET parser lets JSON.parse's SyntaxError through, which it answers as an unexpected error (500,
// "Unexpected error.", logged as an error); a parameter that is not JSON is the client's mistake,
// answered here with 400 and an error naming it, for plain GETs and SSE alike.
import { GraphQLError } from "graphql";
import type { GraphQLParams, Plugin } from "graphql-yoga";

/** The URL parameters that hold JSON. */
const JSON_PARAMETERS = ["variables", "extensions"] as const;

export function getParameters(): Plugin {
  return {
    onRequestParse({ request, setRequestParser }) {
      if (request.method === "GET") setRequestParser(parseGetRequest);
    },
  };
}

/** The operation a GET's URL holds, as Yoga's own parser reads it, with JSON that fails to parse refused. */
function parseGetRequest(request: Request): GraphQLParams {
  const search = new URL(request.url).searchParams;
  const params: GraphQLParams = { operationName: search.get("operationName") || undefined, query: search.get("query") || undefined };
  for (const name of JSON_PARAMETERS) {
    const text = search.get(name);
    if (!text) continue;
    try {
      params[name] = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new GraphQLError(`The URL parameter \`${name}\` is not JSON.`, { extensions: { code: "BAD_REQUEST", http: { status: 400 } } });
    }
  }
  return params;
}
