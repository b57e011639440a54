// GraphQL over HTTP names application/graphql-response+json for responses, and some clients send
// their request bodies with the same type. The README lists it as executed (server/cross-site.ts
// lets it through), but Yoga parses only application/json bodies and would answer 415; such a body
// is parsed here, exactly like a JSON one.
import { GraphQLError } from "graphql";
import type { GraphQLParams, Plugin } from "graphql-yoga";

const MEDIA_TYPE = "application/graphql-response+json";

export function graphqlResponseJsonBodies(): Plugin {
  return {
    onRequestParse({ request, setRequestParser }) {
      if (request.method !== "POST") return;
      const mediaType = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      if (mediaType === MEDIA_TYPE) setRequestParser(parseJsonBody);
    },
  };
}

async function parseJsonBody(request: Request): Promise<GraphQLParams | GraphQLParams[]> {
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    throw new GraphQLError("POST body is not JSON", { extensions: { http: { spec: true, status: 400 }, code: "BAD_REQUEST" } });
  }
  if (body === null || typeof body !== "object") {
    throw new GraphQLError("POST body is expected to be an object", { extensions: { http: { status: 400 }, code: "BAD_REQUEST" } });
  }
  return body as GraphQLParams | GraphQLParams[];
}
