// Query limits (A7): a request may not be deeper, wider (aliases), longer (tokens), costlier or
// bigger (body bytes) than configured. Each refusal is a GraphQL error with a clear message and
// an `extensions.code`, counted in /metrics; the server does no work for a refused request beyond
// parsing and validating it. The same validation applies over graphql-ws, which validates
// through Yoga's enveloped `validate` and `parse`; a graphql-ws subscription's page sizes and cost
// are checked by the WebSocket server before it starts (subscriptionRefusal), since the responses
// of shared subscriptions are executed outside Yoga's pipeline.
import { maxAliasesRule } from "@escape.tech/graphql-armor-max-aliases";
import { maxDepthRule } from "@escape.tech/graphql-armor-max-depth";
import { type DocumentNode, GraphQLError, type GraphQLSchema, getOperationAST, parse, type ValidationContext } from "graphql";

import type { Plugin } from "graphql-yoga";
import { DEFAULT_MAX_RESPONSE_BYTES } from "../graphql/large-text.js";
import { pageSizeError } from "../graphql/list-connection.js";
import { MAX_VISITS, requestCost } from "./page-cost.js";

export type QueryLimits = {
  /** Nested selections below the operation (fragments count as they expand). */
  maxDepth: number;
  /** Aliased fields in one operation. */
  maxAliases: number;
  /** Lexical tokens of the document: bounds parsing work before anything else runs. */
  maxTokens: number;
  /**
   * Field values a request may ask for: each field counts once for every object it is resolved
   * on, a page multiplying the objects below it by its size (server/page-cost.ts).
   */
  maxCost: number;
  /** Bytes of a request body; larger ones are refused (413) before they are read. */
  maxBodyBytes: number;
  /** Bytes of large texts one response may hold (graphql/large-text.ts); unset: DEFAULT_MAX_RESPONSE_BYTES. */
  maxResponseBytes?: number;
  /**
   * The largest `first`/`last` a request may ask for; more is refused rather than clamped. Each
   * connection still serves at most its own page size (100, or 200 for message logs) and says
   * so with `pageInfo.hasNextPage`. A list connection's `first` is held to that list's own largest
   * page instead (graphql/plain-list.ts), which its description states.
   */
  maxPageSize: number;
  /** Records one run's trace keeps (MAX_TRACE_RECORDS): what a trace's spans and events cost at most. */
  traceRecords?: number;
};

export const DEFAULT_QUERY_LIMITS: QueryLimits = {
  maxDepth: 15,
  maxAliases: 30,
  maxTokens: 5_000,
  maxCost: 100_000,
  maxBodyBytes: 1_048_576,
  maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES,
  maxPageSize: 200,
  traceRecords: 50_000,
};

/** Refusals answered as GraphQL errors: the code clients can branch on. */
type Refusal = "QUERY_TOO_DEEP" | "TOO_MANY_ALIASES" | "TOO_MANY_TOKENS" | "QUERY_TOO_COSTLY" | "PAGE_TOO_LARGE";

/** Counts a refusal by its code (the app's metrics). */
export type CountRejected = (reason: string) => void;

function refuse(count: CountRejected, code: Refusal, message: string): GraphQLError {
  count(code);
  return new GraphQLError(message, { extensions: { code } });
}

/** graphql-armor rules report through their callback; the message loses its misleading "Syntax Error:" prefix. */
function reportAs(count: CountRejected, code: Refusal) {
  return {
    propagateOnRejection: false,
    onReject: [
      (context: ValidationContext | null, error: GraphQLError) => context?.reportError(refuse(count, code, error.message.replace(/^Syntax Error: /, ""))),
    ],
  };
}

export function queryLimitsPlugin(limits: QueryLimits, countRejected: CountRejected): Plugin {
  const rules = [
    maxDepthRule({ n: limits.maxDepth, ...reportAs(countRejected, "QUERY_TOO_DEEP") }),
    // Every alias counts, __typename too (graphql-armor exempts it by default; graphql-cop uses it).
    maxAliasesRule({ n: limits.maxAliases, allowList: [], ...reportAs(countRejected, "TOO_MANY_ALIASES") }),
  ];
  return {
    onParse({ setParseFn }) {
      setParseFn((source, options) => {
        try {
          // Comments are not tokens, but each is parsed and kept: as many are allowed as tokens.
          return parse(source, { ...options, maxTokens: limits.maxTokens, maxComments: limits.maxTokens });
        } catch (error) {
          if (error instanceof GraphQLError && /Parsing aborted/.test(error.message)) {
            const what = /comments/.test(error.message) ? "comments" : "tokens";
            throw refuse(countRejected, "TOO_MANY_TOKENS", `The document has more than ${limits.maxTokens} ${what}; send a smaller one.`);
          }
          throw error;
        }
      });
    },
    onValidate({ addValidationRule }) {
      for (const rule of rules) addValidationRule(rule);
    },
    // Page sizes may come from variables, so pages and cost are checked once the variables are known.
    onExecute({ args, setResultAndStopExecution }) {
      const error = refusalOf(args, limits, countRejected);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const error = refusalOf(args, limits, countRejected);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
  };
}

/**
 * The refusal of a subscription over its page sizes or cost, as HTTP and SSE refuse it, or
 * undefined (for any other operation too). Costs are kept by document and page-size variables
 * (page-cost.ts), so identical subscriptions are costed once.
 */
export function subscriptionRefusal(operation: Operation, limits: QueryLimits, count: CountRejected): GraphQLError | undefined {
  if (getOperationAST(operation.document, operation.operationName ?? undefined)?.operation !== "subscription") return undefined;
  return refusalOf(operation, limits, count);
}

type Operation = { schema: GraphQLSchema; document: DocumentNode; operationName?: string | null; variableValues?: Record<string, unknown> | null };

/** The operation's page sizes and cost held to the limits, with its variables' values (their defaults included): the refusal, if any. */
function refusalOf({ schema, document, operationName, variableValues }: Operation, limits: QueryLimits, count: CountRejected): GraphQLError | undefined {
  const cost = requestCost(schema, document, operationName, variableValues, { maxPageSize: limits.maxPageSize, traceRecords: limits.traceRecords });
  if (!cost) return undefined; // execution reports the missing operation or the bad variables
  const { refusal } = cost;
  if (refusal) {
    const { argument, value, max, listMax } = refusal;
    const error = listMax
      ? pageSizeError(value, max, argument)
      : new GraphQLError(`${argument}: ${value} asks for more than ${max} items; page through the connection with "after" instead.`);
    if (error) return refuse(count, "PAGE_TOO_LARGE", error.message);
  }
  if (!Number.isFinite(cost.cost)) {
    return refuse(count, "QUERY_TOO_COSTLY", `The query's fragments on interfaces and unions take more than ${MAX_VISITS} fields to cost; send a simpler one.`);
  }
  if (cost.cost > limits.maxCost) {
    return refuse(
      count,
      "QUERY_TOO_COSTLY",
      `The query asks for ${cost.cost} field values at the page sizes it passes (or the lists' default pages); at most ${limits.maxCost} are allowed. Ask for smaller pages, or fewer lists inside lists.`,
    );
  }
  return undefined;
}

/**
 * Refuses request bodies over the limit before they are read: a declared Content-Length over it
 * gets 413, and a POST that does not declare its length (chunked) gets 411, because its size
 * could only be known by reading it.
 */
export function bodyLimitPlugin(maxBodyBytes: number, countRejected: CountRejected): Plugin {
  return {
    onRequest({ request, endResponse, fetchAPI }) {
      if (request.method !== "POST") return;
      const declared = request.headers.get("content-length");
      const refusal = (status: number, code: string, message: string) => {
        countRejected(code);
        endResponse(fetchAPI.Response.json({ errors: [{ message, extensions: { code } }] }, { status }));
      };
      if (declared !== null && Number(declared) > maxBodyBytes) {
        refusal(413, "REQUEST_TOO_LARGE", `The request body has ${declared} bytes; at most ${maxBodyBytes} are accepted.`);
      } else if (declared === null && request.headers.has("transfer-encoding")) {
        refusal(411, "LENGTH_REQUIRED", "Send the request body with a Content-Length header.");
      }
    },
  };
}
