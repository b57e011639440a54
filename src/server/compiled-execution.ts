// Queries and mutations run as code compiled once per document (graphql-jit) instead of being
// interpreted field by field on every request: a document's plan — which resolvers to call, how
// to coerce its variables, how to complete each type — is built when it is first seen and reused.
// Yoga's parse and validation caches already hand back the same document object for the same
// text, so the compiled plan is found by identity. Subscriptions keep graphql-js's executor
// (Yoga runs them through `subscribe`, which this leaves alone): their events are few per request
// and their iterators are shared across subscribers (trace/updates/shared-subscription-results.ts).
// A plan lives as long as its document, and weighs more than it (its generated code: about 2.3
// bytes a character, measured): each plan's estimate is charged to the document cache, which
// is bounded in bytes (server/document-cache.ts).
import { type DocumentNode, type ExecutionArgs, type ExecutionResult, GraphQLError, type Source } from "graphql";
import { type CompiledQuery, compileQuery, isCompiledQuery } from "graphql-jit";
import type { Plugin } from "graphql-yoga";

/** Each document's plans, by operation name (a document may hold several operations). */
const plans = new WeakMap<DocumentNode, Map<string, CompiledQuery>>();

/**
 * The memory a plan takes per character of the code generated for it: its source and, once run,
 * its bytecode (measured: about 2.3 bytes a character for the SDK's documents before running).
 */
export const PLAN_BYTES_PER_CHARACTER = 4;
/** What a plan is taken to weigh when its code cannot be measured. */
const UNMEASURED_PLAN_BYTES = 1024 * 1024;
/** graphql-jit keeps the code it generated on the plan under this name when asked to (`debug`). */
const CODE = "__DO_NOT_USE_THIS_OR_YOU_WILL_BE_FIRED_compilation";
const KEEP_CODE = { debug: true } as Parameters<typeof compileQuery>[3];

export type CompiledExecutionOptions = {
  /** Told of each plan kept and the bytes it is estimated to take, while its document lives. */
  compiled?(document: DocumentNode, bytes: number): void;
};

export function useCompiledExecution({ compiled }: CompiledExecutionOptions = {}): Plugin {
  const execute = (args: ExecutionArgs) => executeCompiled(args, compiled);
  return {
    onExecute({ setExecuteFn }) {
      setExecuteFn(execute as Parameters<typeof setExecuteFn>[0]);
    },
  };
}

async function executeCompiled(args: ExecutionArgs, compiled: CompiledExecutionOptions["compiled"]): Promise<ExecutionResult> {
  let byName = plans.get(args.document);
  const name = args.operationName ?? "";
  let plan = byName?.get(name);
  if (!plan) {
    const made = compile(args);
    // A refusal (no such operation, say) is not kept: any number of names could be sent.
    if (!isCompiledQuery(made.plan)) return made.plan;
    if (!byName) plans.set(args.document, (byName = new Map()));
    byName.set(name, (plan = made.plan));
    compiled?.(args.document, made.bytes);
  }
  const result = await plan.query(args.rootValue, args.contextValue, args.variableValues);
  return result.errors?.length ? { ...result, errors: result.errors.map((error) => locatedInSource(error, args.document.loc?.source)) } : result;
}

/** The document's plan, or the compiler's refusal, and an estimate of the memory the plan takes. */
export function compile(args: Pick<ExecutionArgs, "schema" | "document" | "operationName">): {
  plan: CompiledQuery | ExecutionResult;
  bytes: number;
} {
  const plan = compileQuery(args.schema, args.document, args.operationName ?? undefined, KEEP_CODE) as (CompiledQuery | ExecutionResult) & {
    [CODE]?: unknown;
  };
  const code = plan[CODE];
  // The plan need not keep its code: only its length is wanted.
  delete plan[CODE];
  return { plan, bytes: typeof code === "string" ? PLAN_BYTES_PER_CHARACTER * code.length : UNMEASURED_PLAN_BYTES };
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
