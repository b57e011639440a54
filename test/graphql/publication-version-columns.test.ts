// A page of publication versions reads the columns its selection shows: `versions(first: 100) { id }`
// reads no version's content (up to a megabyte each) nor its stored diff; a selection that shows
// them reads them, with the same answers.
import { parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const IDS = parse(/* GraphQL */ `
  query ($id: ID!) {
    node(id: $id) { ... on Publication { versions(first: 100) { edges { node { id version } } } } }
  }
`);

const FULL = parse(/* GraphQL */ `
  query ($id: ID!) {
    node(id: $id) {
      ... on Publication {
        versions(first: 100) { edges { node { id version content contentHash changesFromPrevious { addedLines diff } } } }
        latestVersion { id version }
      }
    }
  }
`);

type Version = { id: string; version: number; content?: string; contentHash?: string; changesFromPrevious?: { addedLines: number; diff: string } | null };
type Answer = { node: { versions: { edges: { node: Version }[] }; latestVersion?: { id: string; version: number } } };

const VERSIONS = 5;
/** Version n's body: long, so reading it would be no small part of the page. */
const body = (n: number) => Array.from({ length: 2_000 }, (_, line) => `version ${n}, line ${line}`).join("\n");

describe.each(backends)("the columns a page of publication versions reads on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];
  const versionReads = () => statements.filter((sql) => /FROM "public"\."publication_version"/.test(sql) && !/\bCOUNT\(/i.test(sql));

  beforeAll(async () => {
    t = await startTestApp(backend, { database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }) });
  });
  afterAll(() => t?.close());

  it("reads no content or diff for a page of ids, and reads them when they are selected", async () => {
    const first = await publish(t.client, { title: "Long", content: body(1) });
    const publicationId = first.version.publication.id;
    for (let n = 2; n <= VERSIONS; n += 1) await publish(t.client, { publicationId, content: body(n) });

    statements.length = 0;
    const ids = (await t.client.request(IDS as never, { id: publicationId } as never)) as Answer;
    expect(ids.node.versions.edges.map((e) => e.node.version)).toEqual([5, 4, 3, 2, 1]);
    expect(versionReads()).toHaveLength(1);
    expect(versionReads()[0]).not.toMatch(/"content"|"changes_diff"/);

    statements.length = 0;
    const full = (await t.client.request(FULL as never, { id: publicationId } as never)) as Answer;
    const nodes = full.node.versions.edges.map((e) => e.node);
    expect(nodes.map((v) => v.id)).toEqual(ids.node.versions.edges.map((e) => e.node.id));
    expect(nodes.map((v) => v.content)).toEqual([5, 4, 3, 2, 1].map(body));
    expect(nodes.map((v) => v.changesFromPrevious?.addedLines ?? null)).toEqual([2_000, 2_000, 2_000, 2_000, null]);
    expect(full.node.latestVersion).toEqual({ id: nodes[0]!.id, version: 5 });
    expect(versionReads().some((sql) => /"content"/.test(sql) && /"changes_diff"/.test(sql))).toBe(true);
  });
});
