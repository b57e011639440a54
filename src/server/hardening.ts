// Query limits (A7): a request may not be deeper, wider (aliases), longer (tokens), costlier or
// bigger (body bytes) than configured. Each refusal is a GraphQL error with a clear message and
// an `extensions.code`, counted in /metrics; the server does no work for a refused request beyond
// parsing and validating it. The same validation applies over graphql-ws, which validates
// through Yoga's enveloped `validate` and `parse`.
import { costLimitRule } from "@escape.tech/graphql-armor-cost-limit";
import { maxAliasesRule } from "@escape.tech/graphql-armor-max-aliases";
import { maxDepthRule } from "@escape.tech/graphql-armor-max-depth";
import {
  type ArgumentNode,
  type DocumentNode,
  GraphQLError,
  type GraphQLSchema,
  Kind,
  parse,
  TypeInfo,
  type ValidationContext,
  visit,
  visitWithTypeInfo,
} from "graphql";
import type { Plugin } from "graphql-yoga";
import { LIST_MAX_SIZE, pageSizeError } from "../graphql/list-connection.js";

export type QueryLimits = {
  /** Nested selections below the operation (fragments count as they expand). */
  maxDepth: number;
  /** Aliased fields in one operation. */
  maxAliases: number;
  /** Lexical tokens of the document: bounds parsing work before anything else runs. */
  maxTokens: number;
  /** Static cost: each object field 2, each scalar 1, multiplied by 1.5 per level of depth. */
  maxCost: number;
  /** Bytes of a request body; larger ones are refused (413) before they are read. */
  maxBodyBytes: number;
  /**
   * The largest `first`/`last` a request may ask for; more is refused rather than clamped. Each
   * connection still serves at most its own page size (100, or 200 for message logs) and says
   * so with `pageInfo.hasNextPage`. A list connection's `first` is held to that list's own largest
   * page instead (graphql/plain-list.ts), which its description states.
   */
  maxPageSize: number;
};

export const DEFAULT_QUERY_LIMITS: QueryLimits = {
  maxDepth: 15,
  maxAliases: 30,
  maxTokens: 5_000,
  maxCost: 20_000,
  maxBodyBytes: 1_048_576,
  maxPageSize: 200,
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
    costLimitRule({ maxCost: limits.maxCost, objectCost: 2, scalarCost: 1, depthCostFactor: 1.5, ...reportAs(countRejected, "QUERY_TOO_COSTLY") }),
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
    // Page sizes may come from variables, so they are checked once the variables are known.
    onExecute({ args, setResultAndStopExecution }) {
      const error = pageTooLarge(args.schema, args.document, args.variableValues ?? {}, limits.maxPageSize, countRejected);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const error = pageTooLarge(args.schema, args.document, args.variableValues ?? {}, limits.maxPageSize, countRejected);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
  };
}

/** A `first` or `last` argument, with its field's own maximum when the field is a list connection (graphql/list-connection.ts). */
type PageArgument = { node: ArgumentNode; listMax: number | undefined };

/** Each document's page-size arguments, found once: Yoga's parse cache hands out the same document object for the same text. */
const pageArguments = new WeakMap<DocumentNode, PageArgument[]>();

function pageArgumentsOf(schema: GraphQLSchema, document: DocumentNode): PageArgument[] {
  let found = pageArguments.get(document);
  if (!found) {
    const collected: PageArgument[] = [];
    const typeInfo = new TypeInfo(schema);
    visit(
      document,
      visitWithTypeInfo(typeInfo, {
        Argument(node) {
          if (node.name.value !== "first" && node.name.value !== "last") return;
          const listMax = typeInfo.getFieldDef()?.extensions?.[LIST_MAX_SIZE];
          collected.push({ node, listMax: typeof listMax === "number" ? listMax : undefined });
        },
      }),
    );
    pageArguments.set(document, (found = collected));
  }
  return found;
}

/** The first `first` or `last` argument of the document above its limit, as a refusal. */
function pageTooLarge(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown>,
  max: number,
  count: CountRejected,
): GraphQLError | undefined {
  for (const { node, listMax } of pageArgumentsOf(schema, document)) {
    const value =
      node.value.kind === Kind.INT ? Number(node.value.value) : node.value.kind === Kind.VARIABLE ? Number(variables[node.value.name.value]) : Number.NaN;
    if (listMax !== undefined) {
      const error = value > listMax ? pageSizeError(value, listMax, node.name.value) : undefined;
      if (error) return refuse(count, "PAGE_TOO_LARGE", error.message);
    } else if (value > max) {
      return refuse(count, "PAGE_TOO_LARGE", `${node.name.value}: ${value} asks for more than ${max} items; page through the connection with "after" instead.`);
    }
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
