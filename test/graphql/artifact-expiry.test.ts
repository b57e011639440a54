// W16: a temporary artifact past expiresAt no longer serves its content, the sweeper frees the
// content and keeps the metadata, retained and unexpired artifacts are untouched, and retaining
// after expiry is refused. The app's clock is injected, so expiry is reached without waiting.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ArtifactDocument, RetainArtifactDocument } from "../../sdk/generated/graphql.js";
import { TEMPORARY_ARTIFACT_TTL_MS } from "../../src/domain/research/artifact-service.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { createArtifact, createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { allowTimeFor, waitUntil } from "../support/wait.js";

const DAY_MS = 24 * 60 * 60 * 1000;

describe.each(backends)("artifact expiry on %s", (backend) => {
  let t: TestApp;
  let clock = new Date("2026-01-01T00:00:00.000Z");
  beforeAll(async () => {
    t = await startTestApp(backend, { now: () => clock });
  });
  afterAll(async () => t?.close());

  const read = async (id: string) => expectType((await t.client.request(ArtifactDocument, { id })).node!, "Artifact");
  const row = (id: string) => t.app.db.prisma.artifact.findUniqueOrThrow({ where: { id: idOf(id) } });
  const retain = (workspaceId: string, artifactId: string) =>
    t.client.request(RetainArtifactDocument, { input: { workspaceId, artifactId } }).then((r) => r.retainArtifact);

  it("frees an expired temporary artifact's content, keeps its metadata, and leaves retained and unexpired ones alone", async () => {
    const start = clock;
    const workspace = await createWorkspace(t.client);
    const expiring = await createArtifact(t.client, "text/html", "<p>draft</p>");
    const retained = await createArtifact(t.client, "text/html", "<p>kept</p>");
    expectType(await retain(workspace.id, retained.id), "RetainArtifactSuccess");
    clock = new Date(start.getTime() + 4 * DAY_MS);
    const unexpired = await createArtifact(t.client, "text/plain", "later");
    clock = new Date(start.getTime() + TEMPORARY_ARTIFACT_TTL_MS + 1000);

    // Expiry is the clock's decision: before any sweep the content is no longer served.
    const beforeSweep = await read(expiring.id);
    expect(beforeSweep.content).toBeNull();
    expect(expectType(beforeSweep.contentResult, "ArtifactExpiredError").expiredAt).toBe(expiring.expiresAt);
    expect((await row(expiring.id)).content).toBe("<p>draft</p>");

    expect(await t.app.services.artifacts.sweepExpired()).toBe(1);

    // The content is gone from the database; the row and its metadata stay.
    const stored = await row(expiring.id);
    expect(stored).toMatchObject({ content: "", name: "report.html", mimeType: "text/html", size: Buffer.byteLength("<p>draft</p>"), retention: "TEMPORARY" });
    const after = await read(expiring.id);
    expect(after).toMatchObject({
      name: "report.html",
      mimeType: "text/html",
      size: expiring.size,
      retention: "TEMPORARY",
      createdAt: expiring.createdAt,
      expiresAt: expiring.expiresAt,
      content: null,
    });
    const error = expectType(after.contentResult, "ArtifactExpiredError");
    expect(error).toMatchObject({ expiredAt: expiring.expiresAt, message: expect.stringContaining("expired") });

    // Retained before expiry, and not yet expired: untouched, and read in full.
    expect((await row(retained.id)).content).toBe("<p>kept</p>");
    expect((await read(retained.id)).contentResult).toEqual({ __typename: "ArtifactContent", text: "<p>kept</p>" });
    expect((await row(unexpired.id)).content).toBe("later");
    const fresh = await read(unexpired.id);
    expect(fresh.content).toBe("later");
    expect(fresh.contentResult).toEqual({ __typename: "ArtifactContent", text: "later" });

    // A second sweep finds nothing left to free.
    expect(await t.app.services.artifacts.sweepExpired()).toBe(0);

    // Retaining it now is refused with the same typed error, and changes nothing.
    const refused = expectType(await retain(workspace.id, expiring.id), "ArtifactExpiredError");
    expect(refused.expiredAt).toBe(expiring.expiresAt);
    expect(await row(expiring.id)).toMatchObject({ retention: "TEMPORARY", content: "" });
  });

  it("frees each expired artifact once when two sweeps run at the same time", async () => {
    const start = clock;
    const created = [];
    for (let i = 0; i < 12; i++) created.push(await createArtifact(t.client, "text/plain", `content ${i}`));
    clock = new Date(start.getTime() + TEMPORARY_ARTIFACT_TTL_MS + 1000);
    // These, and whatever the test before left to expire by now.
    const expired = await t.app.db.prisma.artifact.count({
      where: { retention: "TEMPORARY", expiresAt: { lte: clock }, NOT: { content: "" } },
    });
    expect(expired).toBeGreaterThanOrEqual(created.length);

    // On PostgreSQL the two statements run on two connections: the second waits on the rows the
    // first locked, re-reads them and skips what the first emptied.
    const counts = await Promise.all([t.app.services.artifacts.sweepExpired(), t.app.services.artifacts.sweepExpired()]);
    expect(counts[0]! + counts[1]!).toBe(expired);
    for (const artifact of created) expect((await row(artifact.id)).content).toBe("");
    expect(await t.app.services.artifacts.sweepExpired()).toBe(0);
  });
});

describe.each(backends)("the artifact sweeper of a running worker on %s", (backend) => {
  let t: TestApp;
  let clock = new Date("2026-01-01T00:00:00.000Z");
  beforeAll(async () => {
    t = await startTestApp(backend, {
      now: () => clock,
      runtime: {
        model: new ScriptedModel({ name: "idle", steps: [] }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")),
        artifacts: { sweepIntervalMs: 100 },
      },
    });
  });
  afterAll(async () => t?.close());

  const contentOf = async (id: string) => (await t.app.db.prisma.artifact.findUniqueOrThrow({ where: { id: idOf(id) } })).content;

  it("frees expired content on its interval while the worker runs, and stops with the worker", async () => {
    const first = await createArtifact(t.client, "text/plain", "swept by the worker");
    clock = new Date(clock.getTime() + TEMPORARY_ARTIFACT_TTL_MS + 1000);
    await waitUntil(async () => ((await contentOf(first.id)) === "" ? true : undefined), 10_000);

    await t.app.runtime!.worker.stop();
    const second = await createArtifact(t.client, "text/plain", "no sweeper left");
    clock = new Date(clock.getTime() + TEMPORARY_ARTIFACT_TTL_MS + 1000);
    await allowTimeFor("a sweep to free the content (no sweeper is left)", 500);
    expect(await contentOf(second.id)).toBe("no sweeper left");
  });
});

/** The database id inside a global id (for assertions on the stored state). */
function idOf(globalId: string): string {
  return Buffer.from(globalId, "base64").toString("utf8").split(":").slice(1).join(":");
}
