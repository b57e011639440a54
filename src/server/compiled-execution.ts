// Queries and mutations run as code compiled once per document (graphql-jit) instead of being
// interpreted field by field on every request: a document's plan — which resolvers to call, how
// to coerce its variables, how to complete each type — is built when it is first seen and reused.
// Yoga's parse and validation caches already hand back the same document object for the same
// text, so the compiled plan is found by identity. Subscriptions keep graphql-js's executor
// (Yoga runs them through `subscribe`, which this leaves alone): their events are few per request
// and their iterators are shared across subscribers (trace/updates/shared-subscription-results.ts).
import { type DocumentNode, type ExecutionArgs, type ExecutionResult, GraphQLError, type Source } from "graphql";
import { type CompiledQuery, compileQuery, isCompiledQuery } from "graphql-jit";
import type { Plugin } from "graphql-yoga";

type Plan = CompiledQuery | ExecutionResult;

/** Each document's plans, by operation name (a document may hold several operations). */
const plans = new WeakMap<DocumentNode, Map<string, Plan>>();

export function useCompiledExecution(): Plugin {
  return {
    onExecute({ setExecuteFn }) {
      setExecuteFn(executeCompiled as Parameters<typeof setExecuteFn>[0]);
    },
  };
}

async function executeCompiled(args: ExecutionArgs): Promise<ExecutionResult> {
  let byName = plans.get(args.document);
  if (!byName) plans.set(args.document, (byName = new Map()));
  const name = args.operationName ?? "";
  let plan = byName.get(name);
  if (!plan) byName.set(name, (plan = compileQuery(args.schema, args.document, args.operationName ?? undefined)));
  if (!isCompiledQuery(plan)) return plan;
  const result = await plan.query(args.rootValue, args.contextValue, args.variableValues);
  return result.errors?.length ? { ...result, errors: result.errors.map((error) => locatedInSource(error, args.document.loc?.source)) } : result;
}

/**
 * The compiler's errors carry their line and column but not the document's positions, which the
 * server's error masking builds a client's error from; this gives them back, so a masked error
 * still says where in the document it happened, as graphql-js's own errors do.
 */
function locatedInSource(error: GraphQLError, source: Source | undefined): GraphQLError {
  if (error.nodes || !error.locations?.length || !source) return error;
  const lineStarts = [0];
  for (const match of source.body.matchAll(/\r\n|[\n\r]/g)) lineStarts.push(match.index! + match[0].length);
  return new GraphQLError(error.message, {
    source,
    positions: error.locations.map(({ line, column }) => (lineStarts[line - 1] ?? 0) + column - 1),
    path: error.path,
    originalError: error.originalError ?? undefined,
    extensions: error.extensions,
  });
}
