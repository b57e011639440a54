// Publications: immutable, hashed versions with as-of times and source dependencies (W7, W9).
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PublicationDocument, PublishVersionDocument } from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { expectType, publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("publications on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend);
  });
  afterAll(async () => t?.close());

  it("keeps every version exactly: version(n) never answers with a newer one", async () => {
    const asOf = "2026-03-01T09:00:00.000Z";
    const first = await publish(t.client, { title: "Capacity", content: "v1 body", asOf });
    const publicationId = first.version.publication.id;
    expect(first.version).toMatchObject({
      version: 1,
      asOf,
      contentHash: createHash("sha256").update("v1 body").digest("hex"),
    });
    await publish(t.client, { publicationId, content: "v2 body" });
    const read = await t.client.request(PublicationDocument, { id: publicationId, version: 1 });
    const publication = expectType(read.node!, "Publication");
    expect(publication.version).toMatchObject({ version: 1, content: "v1 body", asOf });
    expect(publication.latestVersion).toMatchObject({ version: 2, content: "v2 body" });
    expect(publication.versions.edges.map((e) => e.node.version)).toEqual([2, 1]);
    const missing = await t.client.request(PublicationDocument, { id: publicationId, version: 3 });
    expect(expectType(missing.node!, "Publication").version).toBeNull();
  });

  it("records source dependencies as exact versions, in order", async () => {
    const a = await publish(t.client, { title: "A", content: "a" });
    const b = await publish(t.client, { title: "B", content: "b" });
    await publish(t.client, { publicationId: a.version.publication.id, content: "a2" });
    const derived = await publish(t.client, {
      title: "Synthesis",
      content: "from b1 and a1",
      sources: [
        { publicationId: b.version.publication.id, version: 1 },
        { publicationId: a.version.publication.id, version: 1 },
      ],
    });
    expect(derived.version.sources.map((s) => [s.publication.id, s.version])).toEqual([
      [b.version.publication.id, 1],
      [a.version.publication.id, 1],
    ]);
  });

  it("numbers concurrent versions of one publication 1..n without gaps or duplicates", async () => {
    const first = await publish(t.client, { title: "Busy", content: "0" });
    const publicationId = first.version.publication.id;
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => publish(t.client, { publicationId, content: `writer ${i}` })));
    expect(results.map((r) => r.version.version).sort((x, y) => x - y)).toEqual(Array.from({ length: 10 }, (_, i) => i + 2));
  });

  it.each([
    ["no title for a new publication", { content: "c" }, "title"],
    ["a title for an existing publication", { title: "t", content: "c", publicationId: "UHVibGljYXRpb246eA==" }, "title"],
    ["empty content", { title: "t", content: " " }, "content"],
    ["a title of invisible characters only", { title: "\u200B\u200E\u0007\u3000", content: "c" }, "title"],
    ["an as-of time in the future", { title: "t", content: "c", asOf: "2999-01-01T00:00:00Z" }, "asOf"],
    ["an as-of time in year 0001", { title: "t", content: "c", asOf: "0001-01-01T00:00:00Z" }, "asOf"],
  ])("rejects %s as ValidationError, writing nothing", async (_name, input, field) => {
    const before = await t.app.db.prisma.publicationVersion.count();
    const result = await t.client.request(PublishVersionDocument, { input });
    expect(expectType(result.publishVersion, "ValidationError").issues.map((i) => i.field)).toContain(field);
    expect(await t.app.db.prisma.publicationVersion.count()).toBe(before);
  });

  it("refuses unknown sources and publications as NotFoundError", async () => {
    const unknownSource = await t.client.request(PublishVersionDocument, {
      input: { title: "t", content: "c", sources: [{ publicationId: "UHVibGljYXRpb246eA==", version: 1 }] },
    });
    expect(unknownSource.publishVersion.__typename).toBe("NotFoundError");
    const unknownPublication = await t.client.request(PublishVersionDocument, {
      input: { publicationId: "UHVibGljYXRpb246eA==", content: "c" },
    });
    expect(unknownPublication.publishVersion.__typename).toBe("NotFoundError");
  });
});
