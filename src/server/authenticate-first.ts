// A GraphQL request over HTTP is authenticated before its document is validated: a caller
// without a valid key learns nothing from validation ("Did you mean …" would name fields) and
// gets the 401 any unauthenticated request gets. The context reuses the same authentication. A
// key that cannot be looked up because the database failed for a moment is answered as any
// such failure is (unavailable-responses.ts): SERVICE_UNAVAILABLE, 503, Retry-After. The refusal
// is recorded (refused-requests.ts): the rate limit still counts the request against its
// address, then the refusal is its answer and nothing else runs for it. An address that failed
// too often is refused before its credential is looked up (failed-authentications.ts).
import { GraphQLError } from "graphql";
import type { Plugin } from "graphql-yoga";
import { isTransientDatabaseError } from "../db/transient-errors.js";
import type { Actor } from "../domain/principal/principal-service.js";
import { UNAVAILABLE_WARNING } from "../graphql/transient-failures.js";
import type { Logger } from "../logger.js";
import type { AuthenticateFrom } from "./failed-authentications.js";
import { addressOf } from "./rate-limit.js";
import { refuse } from "./refused-requests.js";
import { unavailableError } from "./unavailable-responses.js";

const AUTHENTICATION_UNAVAILABLE =
  "The database failed for a moment while the request's credentials were checked; nothing was done. Try again after retryAfterSeconds.";

export function authenticateFirst(authenticate: AuthenticateFrom, logger: Logger): { plugin: Plugin; actorOf(request: Request): Promise<Actor> } {
  const actors = new WeakMap<Request, Promise<Actor>>();
  /** The request's actor, authenticated once: first here, from the address it came from. */
  const actorOf = (request: Request, address?: string) => {
    let actor = actors.get(request);
    if (!actor) actors.set(request, (actor = authenticate(request.headers.get("authorization"), address)));
    return actor;
  };
  return {
    actorOf: (request) => actorOf(request),
    plugin: {
      async onParams({ request, context }) {
        try {
          await actorOf(request, addressOf(context));
        } catch (error) {
          if (isTransientDatabaseError(error)) {
            logger.warn(UNAVAILABLE_WARNING, { error: String(error) });
            return refuse(request, unavailableError(AUTHENTICATION_UNAVAILABLE, { resend: true }));
          }
          if (!(error instanceof GraphQLError)) throw error;
          refuse(request, error);
        }
      },
    },
  };
}
