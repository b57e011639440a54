// A request refused by authentication or a rate limit is answered with that refusal, and nothing
// after it runs. Yoga calls every onParams hook even after one has set the request's result — its
// own checks of the parameters included — so the refusal is recorded here and `endRefused`,
// placed right after the rate limit, throws it: no later hook looks up, parses or resolves the
// document (automatic persisted queries, trusted documents), and no later error takes the
// refusal's place. A stranger's or a throttled caller's request costs no parse, learns nothing
// from a store, and gets its 401, 429 or 503 (api.ts places every such hook after `endRefused`).
import type { GraphQLError } from "graphql";
import type { Plugin } from "graphql-yoga";

const refusals = new WeakMap<Request, GraphQLError>();

/** Records a request's refusal (the latest one is its answer). */
export function refuse(request: Request, error: GraphQLError): void {
  refusals.set(request, error);
}

/** Answers a refused request with its refusal: the onParams hooks after this one do not run. */
export function endRefused(): Plugin {
  return {
    onParams({ request }) {
      const refusal = refusals.get(request);
      if (refusal) throw refusal;
    },
  };
}
