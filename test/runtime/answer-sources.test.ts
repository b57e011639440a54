// A run's answer is published on the versions it consumed, and a publication names at most
// PUBLICATION_SOURCES_MAX (200) sources. A run that consumed more still SUCCEEDS with its answer:
// it is not published (TOO_MANY_SOURCES), and the reason says how many sources it would have
// had to leave out. A run that consumed exactly 200 publishes on all of them.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { type SeededPublication, seedLinkedPublications } from "../support/history-seed.js";
import { questionOf } from "../support/requests.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const READS_PER_REPLY = 60;

/** Reads, 60 a reply, as many of the seeded publications as its question says; then answers. */
const readingModel = (seeded: () => SeededPublication[]) =>
  new ScriptedModel({
    name: "reads-many",
    recordRequests: false,
    steps: (request) => {
      const wanted = Number(questionOf(String(request.messages.findLast((m) => m.role === "user")?.content)).replace(/\D/g, ""));
      const from = request.messages.filter((m) => m.role === "assistant").length * READS_PER_REPLY;
      if (from >= wanted) return { content: `Read ${wanted} reports.` };
      const reads = seeded().slice(from, Math.min(wanted, from + READS_PER_REPLY));
      return { toolCalls: reads.map((p) => ({ name: "read_material", arguments: { publicationId: p.globalId, version: 1 } })) };
    },
  });

describe.each(backends)("a run that consumed more materials than a publication may name, on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("succeeds with its answer, is not published, and says how many sources did not fit; 200 are published", { timeout: 180_000 }, async () => {
    let seeded: SeededPublication[] = [];
    t = await startTestApp(backend, { runtime: { model: readingModel(() => seeded), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sources-")) } });
    const workspace = await createWorkspace(t.client);
    seeded = await seedLinkedPublications(t.app.db.prisma, workspace.id, { count: 201 });
    const over = await settled(t.client, (await admit(t.client, { workspaceId: workspace.id, question: "read 201" })).run.id, 120_000);
    expect([over.status, over.answer, over.publicationOutcome]).toEqual(["SUCCEEDED", "Read 201 reports.", "TOO_MANY_SOURCES"]);
    expect(over.publicationSkippedReason).toBe(
      "the run consumed 201 materials and a publication may name at most 200 as its sources; publishing it without the other 1 would hide what it was built on",
    );
    const prisma = t.app.db.prisma;
    expect(await prisma.materialUse.count({ where: { stage: "CONSUMED" } })).toBe(201);
    expect(await prisma.publicationVersion.count({ where: { originRunId: { not: null } } })).toBe(0);

    const atLimit = await settled(t.client, (await admit(t.client, { workspaceId: workspace.id, question: "read 200" })).run.id, 120_000);
    expect([atLimit.status, atLimit.answer, atLimit.publicationOutcome]).toEqual(["SUCCEEDED", "Read 200 reports.", "PUBLISHED"]);
    const published = await prisma.publicationVersion.findFirstOrThrow({
      where: { originRunId: { not: null } },
      select: { _count: { select: { sources: true } } },
    });
    expect(published._count.sources).toBe(200);
  });
});
