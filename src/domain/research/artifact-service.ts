// The artifact module: it stores artifact content and alone decides retention and expiry (W16).
import { z } from "zod";
import type { Artifact, PrismaClient } from "../../generated/prisma/client.js";
import { ArtifactExpiredError, ArtifactStorageLimitError, NotFoundError } from "../errors.js";
import { lockPrincipalRow } from "../principal/principal-lock.js";
import type { Actor } from "../principal/principal-service.js";
import { nonBlank, parseInput } from "../validation.js";
import { TITLE_MAX } from "../validation.js";

export const ARTIFACT_MAX_BYTES = 5 * 1024 * 1024;
/** MAX_ARTIFACT_BYTES_PER_PRINCIPAL's default: 1 GiB of artifact content per principal. */
export const ARTIFACT_BYTES_PER_PRINCIPAL_DEFAULT = 1024 * 1024 * 1024;
/** How long a temporary artifact's content is kept. */
export const TEMPORARY_ARTIFACT_TTL_MS = 7 * 24 * 60 * 60 * 1000;

const createInput = z.object({
  name: nonBlank(TITLE_MAX),
  mimeType: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+(\s*;.*)?$/, "must be a MIME type such as text/html"),
  content: z.string().refine((value) => Buffer.byteLength(value, "utf8") <= ARTIFACT_MAX_BYTES, {
    message: `must be at most ${ARTIFACT_MAX_BYTES} bytes`,
  }),
});

/** What the artifact module decided about a retention request. */
export type RetentionDecision = { retained: true; artifact: Artifact } | { retained: false; artifact: Artifact; reason: string };

/** The part of the artifact module a workspace relies on; tests may wrap it. */
export interface ArtifactRetention {
  retain(actor: Actor, artifactId: string): Promise<RetentionDecision>;
}

/** The media type without parameters: "text/html; charset=utf-8" → "text/html". */
export const essenceOf = (mimeType: string): string => (mimeType.split(";")[0] ?? "").trim().toLowerCase();

export class ArtifactService implements ArtifactRetention {
  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      now?: () => Date;
      /** Bytes of artifact content one principal may store (MAX_ARTIFACT_BYTES_PER_PRINCIPAL). */
      maxBytesPerPrincipal?: number;
    },
  ) {}

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  /**
   * Stores the artifact, or ArtifactStorageLimitError when it would take the principal's stored
   * content past its byte budget. The principal's row is locked for the sum, so creates side by
   * side never pass the budget together. The principal's own expired temporary artifacts are
   * emptied first, as the sweeper would: their bytes are freed, not merely left uncounted.
   */
  async createArtifact(actor: Actor, input: { name: string; mimeType: string; content: string }): Promise<Artifact> {
    const { name, mimeType, content } = parseInput(createInput, input);
    const size = Buffer.byteLength(content, "utf8");
    const max = this.deps.maxBytesPerPrincipal ?? ARTIFACT_BYTES_PER_PRINCIPAL_DEFAULT;
    const ownerId = actor.principalId;
    return this.deps.prisma.$transaction(async (tx) => {
      const now = this.now();
      await lockPrincipalRow(tx, ownerId);
      await tx.artifact.updateMany({
        where: { ownerId, retention: "TEMPORARY", expiresAt: { lte: now }, NOT: { content: "" } },
        data: { content: "" },
      });
      const stored = await tx.artifact.aggregate({
        where: { ownerId, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] },
        _sum: { size: true },
      });
      const inUse = stored._sum.size ?? 0;
      if (inUse + size > max) throw new ArtifactStorageLimitError(max, inUse, size);
      return tx.artifact.create({
        data: { ownerId, name, mimeType, size, content, expiresAt: new Date(now.getTime() + TEMPORARY_ARTIFACT_TTL_MS) },
      });
    });
  }

  /**
   * Keeps the artifact beyond its expiry; an artifact already past it is refused with
   * ArtifactExpiredError, whether or not the sweeper has emptied it yet.
   */
  async retain(actor: Actor, artifactId: string): Promise<RetentionDecision> {
    const now = this.now();
    const kept = await this.deps.prisma.artifact.updateMany({
      where: { id: artifactId, ownerId: actor.principalId, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] },
      data: { retention: "RETAINED", expiresAt: null },
    });
    const artifact = await this.deps.prisma.artifact.findFirst({ where: { id: artifactId, ownerId: actor.principalId } });
    if (!artifact) throw new NotFoundError("Artifact", artifactId);
    if (kept.count === 0) throw new ArtifactExpiredError(artifact.id, artifact.expiresAt ?? now);
    return { retained: true, artifact };
  }

  /**
   * The artifact's content, or ArtifactExpiredError once a temporary artifact is past its
   * expiry. Expiry is decided here, by the clock, not by the sweeper: an expired artifact the
   * sweeper has not reached yet must not read differently from one it has emptied.
   */
  contentOf(artifact: Pick<Artifact, "id" | "content" | "retention" | "expiresAt">): string {
    if (artifact.retention === "TEMPORARY" && artifact.expiresAt && artifact.expiresAt <= this.now()) {
      throw new ArtifactExpiredError(artifact.id, artifact.expiresAt);
    }
    return artifact.content;
  }

  /**
   * Frees the content of every temporary artifact past its expiry; returns how many it emptied.
   * The row stays, with its name, type, size and dates, so the artifact still reads as expired
   * rather than vanishing. One conditional UPDATE: a second sweep at the same time waits on the
   * rows' locks, re-reads them, and skips what the first emptied, as does a retain that won.
   */
  async sweepExpired(): Promise<number> {
    const emptied = await this.deps.prisma.artifact.updateMany({
      where: { retention: "TEMPORARY", expiresAt: { lte: this.now() }, NOT: { content: "" } },
      data: { content: "" },
    });
    return emptied.count;
  }
}
