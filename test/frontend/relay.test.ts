// Relay 21 against a running Dossier server, as a frontend team uses it: relay-compiler compiles
// the operations of ./relay/operations.js against the published SDL (into a temporary directory,
// so nothing compiled is committed), and relay-runtime's Environment and Network drive them.
// Every list pages as a connection through Relay's own @connection handler, a Workspace and a
// Trace are refetched through `node`, and two workspaces' connections never share a record.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  type ConcreteRequest,
  createOperationDescriptor,
  Environment,
  fetchQuery,
  getSelector,
  Network,
  type ReaderFragment,
  RecordSource,
  Store,
} from "relay-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LinkToWorkspaceDocument } from "../../sdk/generated/graphql.js";
import { createDemoModel } from "../../src/runtime/adapters/demo-model.js";
import { admit, createWorkspace, publish } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const repo = fileURLToPath(new URL("../../", import.meta.url));

/** Compiles ./relay/operations.js with relay-compiler; returns the directory of the artefacts. */
function compileRelay(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-relay-"));
  mkdirSync(path.join(dir, "src", "__generated__"), { recursive: true });
  copyFileSync(path.join(repo, "test/frontend/relay/operations.js"), path.join(dir, "src", "DossierRelay.js"));
  copyFileSync(path.join(repo, "schema/schema.graphql"), path.join(dir, "schema.graphql"));
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }));
  const config = { src: "./src", schema: "./schema.graphql", language: "javascript", eagerEsModules: true, artifactDirectory: "./src/__generated__" };
  writeFileSync(path.join(dir, "relay.config.json"), JSON.stringify(config));
  execFileSync(path.join(repo, "node_modules/.bin/relay-compiler"), ["relay.config.json"], { cwd: dir, stdio: "pipe" });
  return path.join(dir, "src", "__generated__");
}

type Artefacts = Record<string, ConcreteRequest | ReaderFragment>;

async function loadArtefacts(dir: string, names: string[]): Promise<Artefacts> {
  const entries = await Promise.all(
    names.map(async (name) => [name, ((await import(pathToFileURL(path.join(dir, `${name}.graphql.js`)).href)) as { default: unknown }).default] as const),
  );
  return Object.fromEntries(entries) as Artefacts;
}

function relayEnvironment(url: string): Environment {
  const network = Network.create(async (params, variables) => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: params.text, variables }),
    });
    return (await response.json()) as never;
  });
  return new Environment({ network, store: new Store(new RecordSource()) });
}

type Connection<T> = { totalCount: number; countCapped?: boolean; edges: { node: T }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };

describe("Relay 21 against a running server", () => {
  let t: TestApp;
  let artefacts: Artefacts;
  let environment: Environment;

  const query = (name: string) => artefacts[name] as ConcreteRequest;
  const fragment = (name: string) => artefacts[name] as ReaderFragment;
  /** Fetches and retains an operation, as a mounted component does. */
  const load = async (name: string, variables: Record<string, unknown>) => {
    await fetchQuery(environment, query(name), variables).toPromise();
    const operation = createOperationDescriptor(query(name), variables);
    environment.retain(operation);
    return environment.lookup(operation.fragment).data as Record<string, unknown>;
  };
  /** The fragment's data as the store holds it now, for a fragment reference. */
  const read = <T>(name: string, reference: unknown) => environment.lookup(getSelector(fragment(name), reference) as never).data as T;
  /** Loads every next page of a @refetchable fragment's connection, as usePaginationFragment's loadNext does. */
  const pageToEnd = async <T>(fragmentName: string, queryName: string, reference: unknown, connectionOf: (data: T) => Connection<unknown>, extra = {}) => {
    for (let pages = 1; ; pages += 1) {
      const { pageInfo } = connectionOf(read<T>(fragmentName, reference));
      if (!pageInfo.hasNextPage) return pages;
      await fetchQuery(environment, query(queryName), { ...extra, after: pageInfo.endCursor }).toPromise();
      if (pages > 20) throw new Error("no end of the connection");
    }
  };

  beforeAll(async () => {
    artefacts = await loadArtefacts(compileRelay(), [
      "DossierRelayRunsQuery",
      "DossierRelayRuns_query",
      "DossierRelayRunsPaginationQuery",
      "DossierRelayWorkspaceQuery",
      "DossierRelayLinks_workspace",
      "DossierRelayLinksPaginationQuery",
      "DossierRelayTraceQuery",
      "DossierRelaySpans_trace",
      "DossierRelaySpansPaginationQuery",
    ]);
    t = await startTestApp("pglite", {
      listen: true,
      runtime: { model: createDemoModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-relay-run-")) },
    });
    environment = relayEnvironment(t.server!.url);
  }, 120_000);
  afterAll(async () => t?.close());

  it("pages runs through @connection to the end, each run once, with totalCount, tokensUsed and model", async () => {
    const questions = ["one", "two", "three", "four", "five"];
    for (const question of questions) await settled(t.client, (await admit(t.client, { question })).run.id);
    const root = await load("DossierRelayRunsQuery", { first: 2 });
    type Runs = { runs: Connection<{ id: string; question: string; status: string; tokensUsed: number; model: string | null }> };
    expect(read<Runs>("DossierRelayRuns_query", root).runs.edges).toHaveLength(2);
    const pages = await pageToEnd<Runs>("DossierRelayRuns_query", "DossierRelayRunsPaginationQuery", root, (data) => data.runs, { first: 2 });
    expect(pages).toBe(3);
    const runs = read<Runs>("DossierRelayRuns_query", root).runs;
    // Relay's connection handler appended each page: every run once, newest first.
    expect(runs.edges.map((edge) => edge.node.question)).toEqual([...questions].reverse());
    expect(runs).toMatchObject({ totalCount: 5, countCapped: false });
    for (const { node } of runs.edges) {
      expect(node.status).toBe("SUCCEEDED");
      expect(node.tokensUsed).toBeGreaterThan(0);
      expect(node.model).toEqual(expect.any(String));
    }
  }, 60_000);

  it("pages a run's trace spans through node: the refetch query continues the same connection", async () => {
    const { run } = await admit(t.client, { question: "Trace me" });
    const traced = (await settled(t.client, run.id)).trace!;
    expect(traced.spans.length).toBeGreaterThan(2);
    const root = await load("DossierRelayTraceQuery", { id: run.id });
    // Run.trace is a union (a TraceExpiredError once expired): the fragment on Trace is an aliased, nullable reference.
    const reference = (root.node as { trace: { DossierRelaySpans_trace: unknown } }).trace.DossierRelaySpans_trace;
    type Spans = { id: string; spans: Connection<{ id: string; kind: string }> };
    const traceId = read<Spans>("DossierRelaySpans_trace", reference).id;
    await pageToEnd<Spans>("DossierRelaySpans_trace", "DossierRelaySpansPaginationQuery", reference, (data) => data.spans, { id: traceId, first: 2 });
    const spans = read<Spans>("DossierRelaySpans_trace", reference).spans;
    expect(spans.edges.map((edge) => edge.node.id)).toEqual(traced.spans.map((span) => span.id));
    expect(spans.totalCount).toBe(traced.spans.length);
  }, 60_000);

  it("keeps two workspaces' link connections apart while both page through node", async () => {
    const titles: Record<string, string[]> = {};
    const ids: string[] = [];
    for (const name of ["east", "west"]) {
      const workspace = await createWorkspace(t.client, `${name} goal`);
      ids.push(workspace.id);
      titles[workspace.id] = [];
      for (const topic of ["salt", "sand", "clay"]) {
        const { version } = await publish(t.client, { title: `${name} ${topic}`, content: `${topic} of the ${name}` });
        await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: version.publication.id } });
        titles[workspace.id]!.unshift(`${name} ${topic}`);
      }
    }
    type Links = { id: string; title: string; links: Connection<{ id: string; target: { title?: string } | null }> };
    const references = await Promise.all(ids.map(async (id) => (await load("DossierRelayWorkspaceQuery", { id })).workspace));
    // Page both, interleaved: a page of one must not land in the other's connection.
    for (let round = 0; round < 3; round += 1) {
      for (const [i, id] of ids.entries()) {
        const { pageInfo } = read<Links>("DossierRelayLinks_workspace", references[i]).links;
        if (pageInfo.hasNextPage)
          await fetchQuery(environment, query("DossierRelayLinksPaginationQuery"), { id, first: 1, after: pageInfo.endCursor }).toPromise();
      }
    }
    for (const [i, id] of ids.entries()) {
      const workspace = read<Links>("DossierRelayLinks_workspace", references[i]);
      expect(workspace.id).toBe(id);
      expect(workspace.links.pageInfo.hasNextPage).toBe(false);
      expect(workspace.links.edges.map((edge) => edge.node.target?.title)).toEqual(titles[id]);
      expect(workspace.links.totalCount).toBe(3);
    }
    // No record of the store is shared: each link's id names one record of one workspace.
    const linkIds = ids.flatMap((_, i) => read<Links>("DossierRelayLinks_workspace", references[i]).links.edges.map((edge) => edge.node.id));
    expect(new Set(linkIds).size).toBe(6);
  }, 60_000);
});
