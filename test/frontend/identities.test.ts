// Identities a client cache can key on (Relay keys records by `id` alone, Apollo by typename and
// id): every object type with an `id` gives one that names it and nothing else in the graph. The
// schema half fails when a type with an `id` appears without a known, type-prefixed identity; the
// data half runs real queries over two workspaces and two searches and fails when one id comes back
// under two typenames, when an id is not prefixed by what it names, or when things a cache must
// keep apart (two workspaces' questions q1, one version found by two searches) share an id.
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { type DocumentNode, GraphQLObjectType, getNamedType, Kind, parse, visit } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LinkToWorkspaceDocument, UpdateCheckpointDocument } from "../../sdk/generated/graphql.js";
import { decodeGlobalId } from "../../src/graphql/global-id.js";
import { schema } from "../../src/graphql/schema.js";
import { createWorkspace, expectType, publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/**
 * What the id of each object type with an `id` names: the prefix of its global id. Two typenames
 * share a prefix only when they are two states of one object (a checkpoint revision reads as
 * Checkpoint or UnavailableCheckpoint, never both at once, and node(id) answers either).
 */
const ID_PREFIX: Record<string, string> = {
  Checkpoint: "CheckpointVersion",
  UnavailableCheckpoint: "CheckpointVersion",
  // Evidence ids are the model's own names for log entries' parts: "ev_<message id>[_a<n>]",
  // never base64, so no global id can equal one.
  Evidence: "ev_",
};

/** Object types that carry an `id` field. */
function typesWithId(): string[] {
  return Object.values(schema.getTypeMap())
    .filter((type): type is GraphQLObjectType => type instanceof GraphQLObjectType && !type.name.startsWith("__"))
    .filter((type) => "id" in type.getFields())
    .map((type) => type.name)
    .sort();
}

describe("identities in the schema", () => {
  it("every object type's id is an ID, and each either is a Node or is known here with its prefix", () => {
    const nonNode: string[] = [];
    for (const name of typesWithId()) {
      const type = schema.getType(name) as GraphQLObjectType;
      const id = type.getFields().id!;
      expect(getNamedType(id.type).name, `${name}.id`).toBe("ID");
      expect(id.args, `${name}.id takes no arguments`).toEqual([]);
      if (!type.getInterfaces().some((i) => i.name === "Node")) nonNode.push(name);
    }
    // Types outside Node still carry a type-prefixed global id (checked on real data below). A new
    // type with an id must be added to this list knowingly, or better, be a Node.
    expect(nonNode).toEqual([
      "CatalogVersion",
      "CheckpointProposal",
      "CheckpointQuestion",
      "Evidence",
      "HistorySearchHit",
      "LinkRefusal",
      "RunAttempt",
      "ScheduleFire",
      "Spill",
      "ToolApproval",
      "WebhookDelivery",
    ]);
  });
});

/** Adds __typename and (where the type has one) id to every selection set. */
function withIdentities(document: DocumentNode): DocumentNode {
  return visit(document, {
    SelectionSet: (node) => ({
      ...node,
      selections: [...node.selections, { kind: Kind.FIELD, name: { kind: Kind.NAME, value: "__typename" } }],
    }),
  });
}

function collect(value: unknown, into: { typename: string; id: string }[]): void {
  if (Array.isArray(value)) for (const item of value) collect(item, into);
  else if (value && typeof value === "object") {
    const record = value as Record<string, unknown>;
    if (typeof record.__typename === "string" && typeof record.id === "string") into.push({ typename: record.__typename, id: record.id });
    for (const child of Object.values(record)) collect(child, into);
  }
}

const READ = parse(/* GraphQL */ `
  query Everything($workspaceId: ID!, $first: String!, $second: String!) {
    node(id: $workspaceId) {
      id
      ... on Workspace {
        checkpoint { ... on Checkpoint { id revision questions { id questionId text } } }
        checkpointVersions { ... on Checkpoint { id questions { id questionId text } } }
        historyCatalog { entries { publicationId versions { id versionId version } } }
      }
    }
    a: searchHistory(workspaceId: $workspaceId, query: $first) { ... on SearchHistorySuccess { hits { id versionId snippet } } }
    b: searchHistory(workspaceId: $workspaceId, query: $second) { ... on SearchHistorySuccess { hits { id versionId snippet } } }
    publications(first: 10) { edges { node { id versions { edges { node { id version } } } } } }
  }
`);

describe("identities on real data", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("pglite");
  });
  afterAll(() => t?.close());

  it("no id comes back under two typenames across two workspaces and two searches", async () => {
    const responses: unknown[] = [];
    for (const name of ["north", "south"]) {
      const workspace = await createWorkspace(t.client, `${name} goal`);
      const { version } = await publish(t.client, { title: `${name} plants`, content: "membranes are the bottleneck of every cell plant" });
      await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: version.publication.id } });
      for (const revision of [0, 1]) {
        const updated = await t.client.request(UpdateCheckpointDocument, {
          input: { workspaceId: workspace.id, expectedRevision: revision, questions: [{ text: `${name} question ${revision}` }] },
        });
        expectType(updated.updateCheckpoint, "UpdateCheckpointSuccess");
      }
      const document = withIdentities(READ) as TypedDocumentNode<Record<string, unknown>, Record<string, unknown>>;
      responses.push(await t.client.request(document, { workspaceId: workspace.id, first: "membranes", second: "bottleneck" }));
    }
    const seen: { typename: string; id: string }[] = [];
    collect(responses, seen);
    const typenamesOf = new Map<string, Set<string>>();
    for (const { typename, id } of seen) typenamesOf.set(id, (typenamesOf.get(id) ?? new Set()).add(typename));
    const clashes = [...typenamesOf].filter(([, names]) => names.size > 1).map(([id, names]) => [id, [...names]]);
    expect(clashes).toEqual([]);
    for (const { typename, id } of seen) {
      const prefix = ID_PREFIX[typename] ?? typename;
      if (prefix.endsWith("_")) expect(id.startsWith(prefix), `${typename} ${id}`).toBe(true);
      else expect(decodeGlobalId(id)?.typename, `${typename} ${id}`).toBe(prefix);
    }
    const kinds = new Set(seen.map((s) => s.typename));
    for (const typename of ["Workspace", "Checkpoint", "CheckpointQuestion", "CatalogVersion", "HistorySearchHit", "PublicationVersion", "Publication"]) {
      expect(kinds.has(typename), `saw ${typename}`).toBe(true);
    }
    // What a cache must keep apart: both workspaces' "q1" in each of their revisions, and each
    // version as found by each of two searches.
    const ids = (typename: string) => seen.filter((s) => s.typename === typename).map((s) => s.id);
    const questions = new Set(ids("CheckpointQuestion"));
    // 2 workspaces × (revision 1: q1; revision 2: q1, q2) = 6 distinct question texts in revisions.
    expect(questions.size).toBe(6);
    expect(new Set(ids("HistorySearchHit")).size).toBe(4);
    expect(new Set(ids("CatalogVersion")).size).toBe(2);
  });
});
