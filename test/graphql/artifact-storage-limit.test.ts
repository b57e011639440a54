// MAX_ARTIFACT_BYTES_PER_PRINCIPAL: a principal's artifacts hold at most that many bytes of
// content, retained and unexpired temporary ones together. One more artifact past it is refused
// with an ArtifactStorageLimitError naming the budget and the bytes in use, and nothing of it is
// stored; another principal is not affected; expired temporary artifacts free their bytes.
// Creates side by side at the budget store exactly as many artifacts as fit.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { CreateArtifactDocument, RetainArtifactDocument } from "../../sdk/generated/graphql.js";
import { TEMPORARY_ARTIFACT_TTL_MS } from "../../src/domain/research/artifact-service.js";
import { backends } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const BUDGET = 1_000;

describe.each(backends)("the artifact byte budget on %s", (backend) => {
  let t: TestApp;
  let clock = new Date("2026-01-01T00:00:00.000Z");
  beforeAll(async () => {
    t = await startTestApp(backend, { maxArtifactBytesPerPrincipal: BUDGET, now: () => clock });
  });
  afterAll(async () => {
    await t?.close();
  });

  const create = async (client: DossierClient, bytes: number) =>
    (await client.request(CreateArtifactDocument, { input: { name: "page.html", mimeType: "text/html", content: "x".repeat(bytes) } })).createArtifact;
  const stored = async (name: string) => {
    const { id: principalId } = await t.app.db.prisma.principal.findFirstOrThrow({ where: { name } });
    const sum = await t.app.db.prisma.artifact.aggregate({ where: { ownerId: principalId }, _sum: { size: true }, _count: true });
    const content = await t.app.db.prisma.artifact.findMany({ where: { ownerId: principalId }, select: { content: true } });
    return { count: sum._count, size: sum._sum.size ?? 0, contentBytes: content.reduce((n, a) => n + Buffer.byteLength(a.content), 0) };
  };

  it("refuses the artifact that would pass the budget, retained ones counted; expired temporary ones free their bytes", async () => {
    const name = `owner-${backend}`;
    const client = t.as(await t.createPrincipal(name));
    const workspace = await createWorkspace(client);
    const kept = expectType(await create(client, 400), "CreateArtifactSuccess").artifact;
    expectType(
      (await client.request(RetainArtifactDocument, { input: { workspaceId: workspace.id, artifactId: kept.id } })).retainArtifact,
      "RetainArtifactSuccess",
    );
    expectType(await create(client, 500), "CreateArtifactSuccess");

    const refused = expectType(await create(client, 101), "ArtifactStorageLimitError");
    expect(refused).toMatchObject({ maxBytes: BUDGET, bytesInUse: 900, size: 101 });
    expect(refused.message).toMatch(/already hold 900 bytes/);
    expect(await stored(name)).toEqual({ count: 2, size: 900, contentBytes: 900 });
    expectType(await create(client, 100), "CreateArtifactSuccess");
    expectType(await create(client, 1), "ArtifactStorageLimitError");

    // Another principal is not affected.
    const other = t.as(await t.createPrincipal(`other-${backend}`));
    expectType(await create(other, BUDGET), "CreateArtifactSuccess");

    // Past their expiry the temporary ones (600 bytes) stop counting and their content is freed; the retained one still counts.
    clock = new Date(clock.getTime() + TEMPORARY_ARTIFACT_TTL_MS + 1_000);
    expectType(await create(client, 600), "CreateArtifactSuccess");
    expect(expectType(await create(client, 1), "ArtifactStorageLimitError").bytesInUse).toBe(BUDGET);
    expect((await stored(name)).contentBytes).toBe(BUDGET);
  });

  it("creates side by side at the budget store exactly as many artifacts as fit", async () => {
    const name = `burst-${backend}`;
    const client = t.as(await t.createPrincipal(name));
    const payloads = await Promise.all(Array.from({ length: 12 }, () => create(client, 300)));
    const kinds = payloads.map((p) => p.__typename);
    expect(kinds.filter((k) => k === "CreateArtifactSuccess")).toHaveLength(3);
    expect(kinds.filter((k) => k === "ArtifactStorageLimitError")).toHaveLength(9);
    expect(await stored(name)).toEqual({ count: 3, size: 900, contentBytes: 900 });
  });
});
