// Tags and metadata as a client gives them at admission and changes tags later: kept as given
// (each tag once), refused with a ValidationError naming the field past their limits, compared by
// an idempotency key like the rest of the request; updateRunTags from concurrent callers loses no
// tag and never goes past 20; another principal's run is NotFound.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdmitRunDocument, RunListDocument, UpdateRunTagsDocument } from "../../sdk/generated/graphql.js";
import type { DossierClient } from "../../sdk/client.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("run tags and metadata on %s", (backend) => {
  let t: TestApp;
  let client: DossierClient;

  beforeAll(async () => {
    t = await startTestApp(backend);
    client = t.client;
  });
  afterAll(() => t?.close());

  const admitRaw = async (input: Record<string, unknown>) => (await client.request(AdmitRunDocument, { input: { question: "q", ...input } })).admitRun;
  const retag = async (runId: string, add?: string[], remove?: string[]) =>
    (await client.request(UpdateRunTagsDocument, { input: { runId, add, remove } })).updateRunTags;

  it("keeps the tags (each once, trimmed) and metadata given at admission, on both ways of admitting", async () => {
    const workspace = await createWorkspace(client);
    const fresh = await admit(client, { workspaceId: workspace.id, question: "q", tags: [" urgent", "billing", "urgent"], metadata: { ticket: "T-1" } });
    const { runs } = await client.request(RunListDocument, { filter: { metadata: { ticket: "T-1" } } });
    expect(runs.edges.map((edge) => [edge.node.id, edge.node.tags, edge.node.metadata])).toEqual([[fresh.run.id, ["urgent", "billing"], { ticket: "T-1" }]]);
    // Continuing a conversation admits in a transaction: the same labels.
    const next = await admit(client, {
      conversationId: fresh.run.conversation.id,
      multitask: "ENQUEUE",
      question: "q2",
      tags: ["later"],
      metadata: { ticket: "T-2" },
    });
    const listed = await client.request(RunListDocument, { filter: { tagsAll: ["later"], metadata: { ticket: "T-2" } } });
    expect(listed.runs.edges.map((edge) => edge.node.id)).toEqual([next.run.id]);
    // None given: none held.
    const bare = await admit(client, { question: "bare" });
    const all = await client.request(RunListDocument, { first: 1 });
    expect(all.runs.edges[0]!.node).toMatchObject({ id: bare.run.id, tags: [], metadata: {} });
  });

  it.each([
    ["tags", { tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, /^tags: at most 20 tags$/],
    ["an invisible tag", { tags: ["ok", "\u200b\u200b"] }, /^tags\.1: a tag must contain a visible character$/],
    ["a tag with a control character", { tags: ["a\u0007b"] }, /^tags\.0: a tag must not contain control/],
    ["a long tag", { tags: ["x".repeat(65)] }, /^tags\.0: a tag must be at most 64 characters$/],
    ["nested metadata", { metadata: { a: { b: "c" } } }, /^metadata\.a: must be a string/],
    ["a metadata array", { metadata: ["a"] }, /^metadata: must be an object of string values$/],
    ["33 metadata keys", { metadata: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, "v"])) }, /^metadata: at most 32 keys$/],
    ["9 KB of metadata", { metadata: { a: "x".repeat(9000) } }, /^metadata: must be at most 8,192 bytes as JSON$/],
  ])("refuses %s with a ValidationError naming the field", async (_name, input, message) => {
    const refused = expectType(await admitRaw(input), "ValidationError");
    expect(refused.issues.map((issue) => `${issue.field}: ${issue.message}`)).toEqual([expect.stringMatching(message)]);
  });

  it("treats other tags or metadata under the same idempotency key as a different request", async () => {
    const first = expectType(await admitRaw({ idempotencyKey: "labels", tags: ["a", "b"], metadata: { k: "v" } }), "AdmitRunSuccess");
    // The same tags in another order are the same request.
    expect(expectType(await admitRaw({ idempotencyKey: "labels", tags: ["b", "a"], metadata: { k: "v" } }), "AdmitRunSuccess")).toMatchObject({
      replayed: true,
      run: { id: first.run.id },
    });
    expect((await admitRaw({ idempotencyKey: "labels", tags: ["a"], metadata: { k: "v" } })).__typename).toBe("IdempotencyConflictError");
    expect((await admitRaw({ idempotencyKey: "labels", tags: ["a", "b"], metadata: { k: "w" } })).__typename).toBe("IdempotencyConflictError");
  });

  it("adds and removes tags, keeping their order, and refuses a change past 20 without applying it", async () => {
    const { run } = await admit(client, { question: "triage", tags: ["new", "billing"] });
    expect(expectType(await retag(run.id, ["urgent", "new"], ["billing"]), "UpdateRunTagsSuccess").run.tags).toEqual(["new", "urgent"]);
    expect(expectType(await retag(run.id, ["x"], ["x"]), "UpdateRunTagsSuccess").run.tags).toEqual(["new", "urgent"]);
    const many = Array.from({ length: 19 }, (_, i) => `m${i}`);
    const refused = expectType(await retag(run.id, many), "ValidationError");
    expect(refused.message).toMatch(/add: the run would hold 21 tags; at most 20/);
    expect(expectType(await retag(run.id, many, ["new"]), "UpdateRunTagsSuccess").run.tags).toHaveLength(20);
    expect(expectType(await retag(run.id, ["\u200b"]), "ValidationError").issues[0]!.field).toBe("add.0");
  });

  it("loses no tag when many callers change one run's tags at once, and never holds more than 20", async () => {
    const { run } = await admit(client, { question: "concurrent" });
    const added = Array.from({ length: 12 }, (_, i) => `c${i}`);
    const results = await Promise.all(added.map((tag) => retag(run.id, [tag])));
    expect(results.every((result) => result.__typename === "UpdateRunTagsSuccess")).toBe(true);
    const { runs } = await client.request(RunListDocument, { filter: { tagsAll: added } });
    expect(new Set(runs.edges[0]!.node.tags)).toEqual(new Set(added));
    // 12 more at once: exactly 8 fit.
    const more = await Promise.all(Array.from({ length: 12 }, (_, i) => retag(run.id, [`d${i}`])));
    expect(more.filter((result) => result.__typename === "UpdateRunTagsSuccess")).toHaveLength(8);
    const after = await client.request(RunListDocument, { filter: { tagsAll: added } });
    expect(after.runs.edges[0]!.node.tags).toHaveLength(20);
  });

  it("answers NotFound for another principal's run", async () => {
    const { run } = await admit(client, { question: "mine" });
    const stranger = t.as(await t.createPrincipal("Stranger"));
    const answer = (await stranger.request(UpdateRunTagsDocument, { input: { runId: run.id, add: ["theirs"] } })).updateRunTags;
    expect(answer.__typename).toBe("NotFoundError");
  });
});
