// Publications: research results kept as immutable, hashed versions with their as-of time
// and source dependencies (W7, W9).
import { createHash } from "node:crypto";
import { z } from "zod";
import type { Prisma, PrismaClient, PublicationVersion } from "../../generated/prisma/client.js";
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import type { EventPublisher } from "../../events/topics.js";
import { recordPublicationEvent } from "../webhooks/webhook-events.js";
import { NotFoundError, ValidationError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { nonBlank, parseInput } from "../validation.js";
import type { RunLinkOutcome, RunLinks } from "./run-links.js";
import { TITLE_MAX } from "../validation.js";
import { eligibilityOf } from "./eligibility.js";
import { changesBetween, changesColumns, type PublicationChanges } from "./publication-changes.js";
import { assertOwned, findOwnedVersions, type VersionRef } from "./owned-objects.js";

export const PUBLICATION_CONTENT_MAX = 1_000_000;
/** The most source versions one version may be built on. */
export const PUBLICATION_SOURCES_MAX = 200;
/** Clocks disagree a little; an as-of time further ahead than this is a mistake. */
const AS_OF_SKEW_MS = 5 * 60 * 1000;
/** A judgement's as-of time lies in the age of the sources Dossier handles; year 0001 is a typo. */
const EARLIEST_AS_OF = new Date("1900-01-01T00:00:00Z");

export const versionRef = z.object({ publicationId: z.string(), version: z.number().int().min(1, "versions start at 1") });

const publishInput = z
  .object({
    publicationId: z.string().nullish(),
    title: nonBlank(TITLE_MAX).nullish(),
    content: nonBlank(PUBLICATION_CONTENT_MAX),
    sources: z.array(versionRef).max(PUBLICATION_SOURCES_MAX, `at most ${PUBLICATION_SOURCES_MAX} sources`).default([]),
    asOf: z.date().nullish(),
    originRunId: z.string().nullish(),
  })
  .superRefine((input, ctx) => {
    if (!input.publicationId && !input.title) {
      ctx.addIssue({ code: "custom", path: ["title"], message: "is required for a new publication" });
    }
    if (input.publicationId && input.title) {
      ctx.addIssue({ code: "custom", path: ["title"], message: "is given only when creating a publication" });
    }
  });

export type PublishInput = z.input<typeof publishInput>;

const revokeInput = versionRef.extend({ reason: nonBlank(2_000) });
export type RevokeInput = z.input<typeof revokeInput>;

export type ReadableVersion = PublicationVersion & { publication: { title: string; latestVersion: number } };

/** The outcome of an exact-version read (W7): that version and no other, or why not. */
export type MaterialRead =
  | { status: "AVAILABLE"; version: ReadableVersion }
  | {
      status: "UNAVAILABLE";
      reason: string;
      version: ReadableVersion | null;
      /** Where a version it rests on broke eligibility: that version's publication, and the reason told a reader outside its reach. */
      unnamed?: { reason: string; publicationId: string };
    };

/** A version frozen for a run at its admission, with what the run is told of its publication. */
export type SelectedMaterial = { versionId: string; publicationId: string; title: string; version: number; asOf: Date; latestVersion: number };

/** The answer to a read of a version that does not exist, or that the reader may not read: the same, so it tells nothing. */
export const missingVersion = (version: number): MaterialRead => ({
  status: "UNAVAILABLE",
  reason: `there is no version ${version} of that publication that you may read`,
  version: null,
});

export const contentHash = (content: string): string => createHash("sha256").update(content, "utf8").digest("hex");

export class PublicationService {
  constructor(private readonly deps: { prisma: PrismaClient; links: RunLinks; now?: () => Date; events?: EventPublisher }) {}

  /** Creates the next immutable version (or a new publication), then links it for its origin run. */
  async publishVersion(actor: Actor, input: PublishInput): Promise<{ version: PublicationVersion; workspaceLink: RunLinkOutcome }> {
    const after: AfterCommit = [];
    const published = await this.deps.prisma.$transaction((tx) => this.publishIn(tx, actor, input, after));
    runAfterCommit(after);
    return published;
  }

  /**
   * publishVersion inside the caller's transaction (a run settling): the version and its link are
   * written with whatever else the transaction writes; what to announce is pushed to `after`.
   */
  async publishIn(
    tx: Prisma.TransactionClient,
    actor: Actor,
    input: PublishInput,
    after: AfterCommit,
  ): Promise<{ version: PublicationVersion; workspaceLink: RunLinkOutcome }> {
    const parsed = parseInput(publishInput, input);
    const now = this.deps.now?.() ?? new Date();
    const asOf = parsed.asOf ?? now;
    if (asOf.getTime() > now.getTime() + AS_OF_SKEW_MS) {
      throw new ValidationError([{ field: "asOf", message: "must not be in the future" }]);
    }
    if (asOf.getTime() < EARLIEST_AS_OF.getTime()) {
      throw new ValidationError([{ field: "asOf", message: "must not be before 1900" }]);
    }
    const unique = [...new Map(parsed.sources.map((s) => [`${s.publicationId}@${s.version}`, s])).values()];
    const sources = await findOwnedVersions(tx, actor, unique);
    if (parsed.originRunId) await assertOwned(tx, actor, "RUN", parsed.originRunId);
    let publicationId = parsed.publicationId;
    let number = 1;
    let changes: PublicationChanges | null = null;
    if (publicationId) {
      const bumped = await tx.publication.updateMany({
        where: { id: publicationId, ownerId: actor.principalId },
        data: { latestVersion: { increment: 1 } },
      });
      if (bumped.count === 0) throw new NotFoundError("Publication", publicationId);
      number = (await tx.publication.findUniqueOrThrow({ where: { id: publicationId } })).latestVersion;
      // What changed since the previous version, decided once here for every version that has one.
      const previous = await tx.publicationVersion.findUnique({
        where: { publicationId_version: { publicationId, version: number - 1 } },
        select: { version: true, content: true },
      });
      if (previous) changes = await changesBetween(previous, { version: number, content: parsed.content });
    } else {
      publicationId = (await tx.publication.create({ data: { ownerId: actor.principalId, title: parsed.title!, latestVersion: 1 } })).id;
    }
    const version = await tx.publicationVersion.create({
      data: {
        publicationId,
        version: number,
        content: parsed.content,
        contentHash: contentHash(parsed.content),
        asOf,
        originRunId: parsed.originRunId ?? null,
        ...changesColumns(changes),
        sources: { create: sources.map((source, position) => ({ sourceVersionId: source.id, position })) },
      },
    });
    await recordPublicationEvent(tx, actor.principalId, version, this.deps.events && { events: this.deps.events, after });
    const workspaceLink = parsed.originRunId
      ? await this.deps.links.linkForRunIn(tx, parsed.originRunId, { kind: "PUBLICATION", targetId: version.publicationId }, after)
      : "NO_WORKSPACE";
    return { version, workspaceLink };
  }

  /**
   * Reads exactly `version` of a publication for a principal (W7): it must exist and be the
   * principal's to read, its content must match its hash, and it and every source it was built
   * on must be eligible. A newer version never stands in for the one asked for.
   */
  async readVersion(actor: Actor, ref: VersionRef): Promise<MaterialRead> {
    const version = await this.deps.prisma.publicationVersion.findFirst({
      where: { publicationId: ref.publicationId, version: ref.version, publication: { ownerId: actor.principalId } },
      include: { publication: { select: { title: true, latestVersion: true } } },
    });
    if (!version) return missingVersion(ref.version);
    if (contentHash(version.content) !== version.contentHash) {
      return { status: "UNAVAILABLE", reason: `"${version.publication.title}" version ${version.version} no longer matches its content hash`, version };
    }
    const eligibility = (await eligibilityOf(this.deps.prisma, [version.id])).get(version.id);
    if (eligibility && !eligibility.eligible) {
      const { reason, unnamedReason, culprit } = eligibility;
      return { status: "UNAVAILABLE", reason, version, unnamed: { reason: unnamedReason, publicationId: culprit.publicationId } };
    }
    return { status: "AVAILABLE", version };
  }

  /**
   * The latest version of the publication a run was admitted to continue (continuesPublicationId),
   * read as readVersion reads it; null when the run continues none, or the publication has no version yet.
   */
  async continuedBy(runId: string): Promise<MaterialRead | null> {
    const run = await this.deps.prisma.run.findUnique({
      where: { id: runId },
      select: { ownerId: true, continuesPublication: { select: { id: true, latestVersion: true } } },
    });
    const publication = run?.continuesPublication;
    if (!run || !publication || publication.latestVersion < 1) return null;
    return this.readVersion({ principalId: run.ownerId }, { publicationId: publication.id, version: publication.latestVersion });
  }

  /**
   * The exact versions frozen for each of `runIds` when it was admitted, in the order they were
   * selected: one read for every run that starts together (runtime/workspace/workspace-context.ts).
   */
  async selectedForRuns(runIds: readonly string[]): Promise<Map<string, SelectedMaterial[]>> {
    const selected = new Map<string, SelectedMaterial[]>();
    if (runIds.length === 0) return selected;
    const materials = await this.deps.prisma.runMaterial.findMany({
      where: { runId: { in: [...runIds] } },
      orderBy: [{ runId: "asc" }, { position: "asc" }],
      include: { publicationVersion: { include: { publication: { select: { title: true, latestVersion: true } } } } },
    });
    for (const { runId, publicationVersion: v } of materials) {
      const material = {
        versionId: v.id,
        publicationId: v.publicationId,
        title: v.publication.title,
        version: v.version,
        asOf: v.asOf,
        latestVersion: v.publication.latestVersion,
      };
      const ofRun = selected.get(runId);
      if (ofRun) ofRun.push(material);
      else selected.set(runId, [material]);
    }
    return selected;
  }

  /**
   * Revokes one version: it, and every version built on it, is no longer eligible to be read
   * (W7). The content stays stored. Revoking again keeps the first revocation.
   */
  async revokeVersion(actor: Actor, input: RevokeInput): Promise<PublicationVersion> {
    const { publicationId, version, reason } = parseInput(revokeInput, input);
    const [found] = await findOwnedVersions(this.deps.prisma, actor, [{ publicationId, version }]);
    await this.deps.prisma.publicationVersion.updateMany({
      where: { id: found!.id, revokedAt: null },
      data: { revokedAt: this.deps.now?.() ?? new Date(), revocationReason: reason },
    });
    return this.deps.prisma.publicationVersion.findUniqueOrThrow({ where: { id: found!.id } });
  }
}
