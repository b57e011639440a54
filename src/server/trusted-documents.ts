// Trusted documents: a request may name its document by `documentId` (the GraphQL-over-HTTP
// persisted-documents appendix) instead of sending its text, over HTTP, SSE and graphql-ws. The
// ids are those of the SDK's manifest (sdk/generated/persisted-documents.json, written by
// `npm run generate:sdk`) and of the manifests in TRUSTED_DOCUMENTS_DIR. With
// TRUSTED_DOCUMENTS_ONLY=true every other document is refused with TRUSTED_DOCUMENT_REQUIRED
// (400), except GraphiQL's requests when GRAPHIQL=true — recognised by the header its page sends,
// whose value is a secret of this process that only the page the server served carries.
import { usePersistedOperations } from "@graphql-yoga/plugin-persisted-operations";
import { createHash, timingSafeEqual } from "node:crypto";
import { GraphQLError, Kind, Lexer, parse, print, Source, TokenKind, visit } from "graphql";
import { LRUCache } from "lru-cache";
import type { Plugin } from "graphql-yoga";
import sdkManifest from "../../sdk/generated/persisted-documents.json" with { type: "json" };

/** The header (and graphql-ws connection parameter header) Dossier's GraphiQL page sends with every operation. */
export const GRAPHIQL_HEADER = "x-dossier-graphiql";

export type TrustedDocumentsOptions = {
  /** TRUSTED_DOCUMENTS_ONLY: refuse every document that is not a trusted one. */
  only: boolean;
  /** Documents besides the SDK's, by id (TRUSTED_DOCUMENTS_DIR's manifests). */
  extra?: Record<string, string>;
  /** GRAPHIQL=true with TRUSTED_DOCUMENTS_ONLY: requests that carry GRAPHIQL_HEADER with `graphiqlSecret` may send any document. */
  graphiqlExempt?: boolean;
  /** The value of GRAPHIQL_HEADER the served page carries (a per-process secret: a constant is a header anyone can send). */
  graphiqlSecret?: string;
  /** Counts each refusal by its code (the app's metrics). */
  countRejected?: (reason: string) => void;
};

export type TrustedDocuments = {
  readonly only: boolean;
  /** The Yoga plugin resolving `documentId` over HTTP and SSE, and refusing other documents when `only`. */
  plugin: Plugin;
  /** Whether a document text may run when only trusted documents may (whoever sends it). */
  admits(query: string): boolean;
  /** For one graphql-ws operation: the document text to run, or the error that refuses it. */
  resolveSocketOperation(params: SocketOperation, connectionParams: Record<string, unknown> | undefined): string | GraphQLError;
};

export type SocketOperation = { query?: unknown; documentId?: unknown };

// `spec`: like a validation error — 400 for application/graphql-response+json, and 200 for a
// client that accepts only application/json, as the GraphQL-over-HTTP spec asks.
const refusal = (code: "TRUSTED_DOCUMENT_REQUIRED" | "TRUSTED_DOCUMENT_NOT_FOUND" | "BAD_REQUEST", message: string) =>
  new GraphQLError(message, { extensions: { code, http: { status: 400, spec: true } } });

const REQUIRED =
  "This server runs only trusted documents (TRUSTED_DOCUMENTS_ONLY=true): send the documentId of a document in its manifests instead of the document's text.";
const NOT_TEXT = "`query` must be a string: the text of a GraphQL document.";
const MISSING = () => refusal("BAD_REQUEST", "Send a GraphQL document as `query`, or a trusted document's id as `documentId`.");

export function trustedDocuments({
  only,
  extra = {},
  graphiqlExempt = false,
  graphiqlSecret,
  countRejected = () => undefined,
}: TrustedDocumentsOptions): TrustedDocuments {
  const required = () => (countRejected("TRUSTED_DOCUMENT_REQUIRED"), refusal("TRUSTED_DOCUMENT_REQUIRED", REQUIRED));
  const notFound = (id: string) => (
    countRejected("TRUSTED_DOCUMENT_NOT_FOUND"), refusal("TRUSTED_DOCUMENT_NOT_FOUND", `No trusted document has the documentId ${JSON.stringify(id)}.`)
  );
  const documents = new Map<string, string>([...Object.entries(sdkManifest as Record<string, string>), ...Object.entries(extra)]);
  // The text of a trusted document is no other document: sent whole, it runs too — also as a
  // client such as Apollo Client prints it, with __typename added to its selections.
  const texts = new Set(documents.values());
  // A client's text is parsed no further than the largest trusted document as such a client sends it.
  const maxTokens = Math.max(0, ...[...texts].map((text) => comparedTokens(printed(text))));
  const withoutTypenames = (query: string) => shapeOf(query, maxTokens);
  const shapes = new Set([...texts].map((text) => withoutTypenames(printed(text))));
  shapes.delete("");
  // What was decided for a text, by a digest of it: any caller may send texts of up to the body
  // limit, and a cache keyed by the texts themselves would keep hundreds of them.
  const checked = new LRUCache<string, boolean>({ max: 500 });
  const admits = (query: string) => {
    if (texts.has(query)) return true;
    const key = createHash("sha256").update(query).digest("base64");
    return checked.get(key) ?? checked.set(key, shapes.has(withoutTypenames(query))).get(key)!;
  };
  const fromGraphiql = (headers: { get(name: string): string | null }) =>
    graphiqlExempt && graphiqlSecret !== undefined && sameSecret(headers.get(GRAPHIQL_HEADER), graphiqlSecret);
  const allowed = (query: string, headers: { get(name: string): string | null }) => !only || admits(query) || fromGraphiql(headers);
  const admittedQueries = new WeakSet<Request>();

  const persisted = usePersistedOperations({
    getPersistedOperation: (id) => documents.get(id) ?? null,
    // Yoga's GET parser keeps only the standard parameters: a GET's documentId is read from its URL.
    extractPersistedOperationId: (params, request) => {
      const id = (params as { documentId?: unknown }).documentId ?? (request.method === "GET" ? new URL(request.url).searchParams.get("documentId") : null);
      return typeof id === "string" && id !== "" ? id : null;
    },
    allowArbitraryOperations: (request) => admittedQueries.has(request),
    customErrors: {
      notFound: ({ params, request }) =>
        notFound(String((params as { documentId?: unknown }).documentId ?? new URL(request.url).searchParams.get("documentId"))),
      keyNotFound: MISSING,
      persistedQueryOnly: required,
    },
  });
  const plugin: Plugin = {
    onParams({ params, request }) {
      // Else the persisted-operations plugin would take any query for a text it must refuse.
      if (params.query != null && typeof params.query !== "string") throw refusal("BAD_REQUEST", NOT_TEXT);
      if (typeof params.query === "string" && params.query !== "" && allowed(params.query, request.headers)) admittedQueries.add(request);
    },
    // Over SSE, Yoga would answer 200 and send the refusal as the stream's one event; a
    // subscription that cannot start gets 400 and the errors as JSON instead, as graphql-sse's
    // own server answers a request it cannot execute, so a client learns it from the status.
    onResultProcess({ request, result, setResultProcessor }) {
      if (!(request.headers.get("accept") ?? "").includes("text/event-stream") || !isRefusal(result)) return;
      const errors = (result as { errors: GraphQLError[] }).errors.map(({ message, extensions: { http: _http, ...extensions } }) => ({ message, extensions }));
      setResultProcessor((_refused, fetchAPI) => fetchAPI.Response.json({ errors }, { status: 400 }), "application/json");
    },
  };
  return {
    only,
    admits,
    plugin: { onPluginInit: ({ addPlugin }) => (addPlugin(plugin), addPlugin(persisted)) },
    resolveSocketOperation({ query, documentId }, connectionParams) {
      if (typeof documentId === "string" && documentId !== "" && !query) return documents.get(documentId) ?? notFound(documentId);
      if (typeof query !== "string" || query === "") return MISSING();
      return allowed(query, socketHeaders(connectionParams)) ? query : required();
    },
  };
}

/** The text as GraphQL's printer writes it; "" when it does not parse. */
function printed(text: string): string {
  try {
    return print(parse(text, { noLocation: true }));
  } catch {
    return "";
  }
}

/**
 * The tokens a trusted text holds as a client such as Apollo Client may send it: its own, and one
 * __typename in each selection set. 0 when it does not parse.
 */
function comparedTokens(text: string): number {
  if (text === "") return 0;
  const lexer = new Lexer(new Source(text));
  let tokens = 0;
  while (lexer.advance().kind !== TokenKind.EOF) tokens += 1;
  let selectionSets = 0;
  visit(parse(text, { noLocation: true }), { [Kind.SELECTION_SET]: () => void (selectionSets += 1) });
  return tokens + selectionSets;
}

/**
 * A document's shape without its __typename selections; "" unless the text is exactly as GraphQL's
 * printer writes it (as Apollo Client sends documents), so any other difference from a trusted
 * text — a space, a line, a comment — still refuses it. __typename selects only the name of a type
 * the schema already shows: two documents that differ only in it read the same data. The parse
 * stops after `maxTokens` (the largest trusted document's): a longer text is no trusted one.
 */
function shapeOf(query: string, maxTokens: number): string {
  try {
    const document = parse(query, { noLocation: true, maxTokens, maxComments: 0 });
    if (print(document) !== query) return "";
    return print(visit(document, { Field: (node) => (node.name.value === "__typename" && !node.alias ? null : undefined) }));
  } catch {
    return "";
  }
}

const REFUSALS = new Set(["TRUSTED_DOCUMENT_REQUIRED", "TRUSTED_DOCUMENT_NOT_FOUND"]);

function isRefusal(result: unknown): boolean {
  const errors = (result as { errors?: readonly { extensions?: { code?: unknown } }[] }).errors;
  return errors?.length === 1 && REFUSALS.has(String(errors[0]?.extensions?.code));
}

/** The headers a graphql-ws client sends as connection parameters ({ headers: { … } }), as the SDK and GraphiQL do. */
function socketHeaders(connectionParams: Record<string, unknown> | undefined) {
  const headers = connectionParams?.headers;
  return {
    get(name: string): string | null {
      if (typeof headers !== "object" || headers === null) return null;
      const entry = Object.entries(headers).find(([key]) => key.toLowerCase() === name);
      return typeof entry?.[1] === "string" ? entry[1] : null;
    },
  };
}

/** Whether a header carries the secret, compared in constant time. */
function sameSecret(sent: string | null, secret: string): boolean {
  if (sent === null) return false;
  const a = Buffer.from(sent);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}
