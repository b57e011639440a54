// Reads README.md's examples and runs them as a reader would: GraphQL blocks over HTTP and
// graphql-ws (and SSE) with an API key, shell lines through the npm scripts they name.
import { readFileSync } from "node:fs";
import { type FormattedExecutionResult, Kind, type OperationTypeNode, parse } from "graphql";
import { createClient } from "graphql-ws";
import WebSocket from "ws";
import { projectRoot, type Spawned, spawnShell, wsSubscriptions } from "./processes.js";

export type Block = { lang: string; text: string };

/** Every fenced block of README.md, in order, read when called: the test runs the text as it is now. */
export function readmeBlocks(): Block[] {
  const readme = readFileSync(`${projectRoot}/README.md`, "utf8");
  return [...readme.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map(([, lang, text]) => ({ lang: lang!, text: text! }));
}

/** `"<workspace id from createWorkspace>"`, `"<MODEL_CALL span id from run>"`: see README, Try it. */
const PLACEHOLDER = /"<(?:([A-Z_]+) )?(\w+) id from (\w+)>"/g;

type Data = Record<string, unknown>;

/**
 * The id a placeholder names: in the latest earlier answer holding the root field, the first
 * object (in document order) under the key or its plural (a list or a connection), of that kind when one is given.
 */
export function fillPlaceholders(text: string, answers: Data[]): string {
  return text.replace(PLACEHOLDER, (placeholder, kind: string | undefined, key: string, field: string) => {
    const answer = answers.findLast((data) => data[field] != null);
    const id = answer && firstId(answer[field], key, kind);
    if (!id) throw new Error(`${placeholder}: no earlier answer of ${field} holds one`);
    return JSON.stringify(id);
  });
}

function firstId(value: unknown, key: string, kind: string | undefined): string | undefined {
  if (Array.isArray(value)) {
    for (const item of value) {
      const id = firstId(item, key, kind);
      if (id) return id;
    }
    return undefined;
  }
  if (value === null || typeof value !== "object") return undefined;
  for (const [name, child] of Object.entries(value)) {
    if (name === key || name === `${key}s`) {
      // A list, a connection (its nodes) or one object.
      const edges = (child as { edges?: { node: unknown }[] } | null)?.edges;
      for (const candidate of Array.isArray(child) ? child : edges ? edges.map((edge) => edge.node) : [child]) {
        const object = candidate as { id?: unknown; kind?: unknown } | null;
        if (typeof object?.id === "string" && (kind === undefined || object.kind === kind)) return object.id;
      }
    }
    const id = firstId(child, key, kind);
    if (id) return id;
  }
  return undefined;
}

/** An example's operation type and its root fields by response name (alias or name). */
export function operationOf(query: string): { type: OperationTypeNode; fields: string[] } {
  const [definition, ...more] = parse(query).definitions;
  if (definition?.kind !== Kind.OPERATION_DEFINITION || more.length > 0) throw new Error(`not one operation:\n${query}`);
  const fields = definition.selectionSet.selections.flatMap((s) => (s.kind === Kind.FIELD ? [(s.alias ?? s.name).value] : []));
  return { type: definition.operation, fields };
}

/** A query or mutation over HTTP, as GraphiQL sends it. */
export async function post(url: string, key: string, query: string): Promise<FormattedExecutionResult<Data>> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ query }),
  });
  return (await response.json()) as FormattedExecutionResult<Data>;
}

export type Subscription = {
  results: FormattedExecutionResult<Data>[];
  /** Resolves when the server completes it, rejects on its error. */
  completed: Promise<void>;
  /** False once stop() was called. */
  readonly running: boolean;
  stop(): void;
};

/** A subscription over graphql-ws, the key in the connection parameters as the README shows. */
export function subscribeWs(url: string, key: string, query: string): Subscription {
  const client = createClient({
    url: url.replace(/^http/, "ws"),
    webSocketImpl: WebSocket,
    connectionParams: { headers: { Authorization: `Bearer ${key}` } },
    retryAttempts: 0,
  });
  const results: FormattedExecutionResult<Data>[] = [];
  const completed = new Promise<void>((resolve, reject) => {
    client.subscribe<Data, Data>({ query }, { next: (result) => results.push(result), error: reject, complete: resolve });
  });
  let running = true;
  return {
    results,
    completed: completed.finally(() => client.dispose()),
    get running() {
      return running;
    },
    stop() {
      running = false;
      void client.dispose();
    },
  };
}

/** A subscription over SSE (POST with Accept: text/event-stream), read to its end. */
export async function subscribeSse(url: string, key: string, query: string): Promise<FormattedExecutionResult<Data>[]> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", authorization: `Bearer ${key}` },
    body: JSON.stringify({ query }),
  });
  // The body ends when the server completes the stream.
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((message) => /^event: next$/m.test(message))
    .map((message) => JSON.parse(/^data: (.*)$/m.exec(message)![1]!) as FormattedExecutionResult<Data>);
}

/**
 * A README shell line as npm would run it, minus the setup step the test run has already done
 * (test/npm-setup.test.ts checks every script begins with it): `npm start`, `npm run -s <name> --
 * <args>` become that script's own command with the arguments; anything else stays as written.
 */
export function withoutNpm(line: string): string {
  const scripts = (JSON.parse(readFileSync(`${projectRoot}/package.json`, "utf8")) as { scripts: Record<string, string> }).scripts;
  return line.replace(/\bnpm (?:start|run (?:-s )?([\w:-]+))(?: --)?/, (_npm, name: string | undefined) => {
    const script = scripts[name ?? "start"];
    if (!script) throw new Error(`no npm script ${name}`);
    return script.replace(/^node scripts\/ensure-setup\.mjs(?: \w+)? && /, "");
  });
}

export type ReadmeServer = { url: string; process: Spawned; wsSubscriptions(): Promise<number>; stop(): Promise<void> };

/** The server as a README shell line starts it (after withoutNpm), on a free port; a fresh embedded database is created and migrated first (seconds, a minute on a busy machine). */
export async function startReadmeServer(command: string, env: Record<string, string>): Promise<ReadmeServer> {
  const server = spawnShell(command, { env: { PORT: "0", ...env } });
  const line = await server.waitForOutput(/"url":"[^"]+"/, 120_000);
  const url = JSON.parse(`{${line}}`).url as string;
  return {
    url,
    process: server,
    /** WebSocket subscriptions the server has registered, from its /metrics. */
    wsSubscriptions: () => wsSubscriptions(url),
    async stop() {
      if (server.child.exitCode !== null) return;
      server.child.kill("SIGTERM");
      await server.exited;
    },
  };
}
