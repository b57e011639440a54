// A GraphQL request over HTTP is authenticated before its document is validated: a caller
// without a valid key learns nothing from validation ("Did you mean …" would name fields) and
// gets the 401 any unauthenticated request gets. The context reuses the same authentication.
import { GraphQLError } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { Actor } from "../domain/principal/principal-service.js";
import type { Authenticate } from "../graphql/authenticate.js";

export function authenticateFirst(authenticate: Authenticate): { plugin: Plugin; actorOf(request: Request): Promise<Actor> } {
  const actors = new WeakMap<Request, Promise<Actor>>();
  const actorOf = (request: Request) => {
    let actor = actors.get(request);
    if (!actor) actors.set(request, (actor = authenticate(request.headers.get("authorization"))));
    return actor;
  };
  return {
    actorOf,
    plugin: {
      async onParams({ request, setResult }) {
        try {
          await actorOf(request);
        } catch (error) {
          if (!(error instanceof GraphQLError)) throw error;
          setResult({ errors: [error] });
        }
      },
    },
  };
}
