// Scores (issue 39): a principal's judgements of its runs, publication versions, spans and
// checkpoint versions, each on a scale the principal configured (score-rules.ts). A target of
// another principal's is NotFound, exactly as one that does not exist. A score is part of the
// research record: the next run is shown a version's HUMAN scores (score-provenance.ts), the
// owner's webhooks hear SCORE_CREATED in the score's own transaction, and the OTLP exporter
// reports it as a `gen_ai.evaluation.result` event.
import { createHash } from "node:crypto";
import { z } from "zod";
import type { EventPublisher } from "../../events/topics.js";
import type { Prisma, PrismaClient, Score, ScoreConfig, ScoreSource, ScoreTargetKind } from "../../generated/prisma/client.js";
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import { IdempotencyConflictError, NotFoundError, ValidationError } from "../errors.js";
import { decodeGlobalId, encodeGlobalId } from "../global-id.js";
import type { Actor } from "../principal/principal-service.js";
import { nonBlank, parseInput } from "../validation.js";
import { recordWebhookEvent } from "../webhooks/webhook-events.js";
import {
  SCORE_CATEGORIES_MAX,
  SCORE_COMMENT_MAX,
  SCORE_CONFIGS_PER_PRINCIPAL_MAX,
  type ScoreConfigInput,
  sameSettings,
  scoreConfigSettings,
  scoreReading,
} from "./score-rules.js";
import { type HumanScores, humanScoresOf } from "./score-provenance.js";
import { idempotencyScopeOf } from "../principal/idempotency-scope.js";
import { lockPrincipalRow } from "../principal/principal-lock.js";

/** The global id type names a score may target, and the kind each is stored as. */
export const SCORE_TARGETS: Record<string, ScoreTargetKind> = {
  Run: "RUN",
  PublicationVersion: "PUBLICATION_VERSION",
  Span: "SPAN",
  CheckpointVersion: "CHECKPOINT_VERSION",
};
export const TARGET_TYPENAMES: Record<ScoreTargetKind, string> = {
  RUN: "Run",
  PUBLICATION_VERSION: "PublicationVersion",
  SPAN: "Span",
  CHECKPOINT_VERSION: "CheckpointVersion",
};

export type CreateScoreInput = {
  /** A global id of a Run, PublicationVersion, Span or CheckpointVersion. */
  targetId: string;
  configName: string;
  value?: number | null;
  label?: string | null;
  comment?: string | null;
  source: ScoreSource;
  idempotencyKey?: string | null;
};

const scoreText = z.object({
  comment: nonBlank(SCORE_COMMENT_MAX).nullish(),
  idempotencyKey: z.string().min(1, "must not be empty").max(200, "must be at most 200 characters").nullish(),
});

/** Which credential acted, as a score records it: an API key, an access token, or another credential. */
export function credentialOf(actor: Actor): string | null {
  if (actor.access) return `token:${actor.access.tokenId}`;
  if (actor.keyId) return `key:${actor.keyId}`;
  return actor.credentialId ?? null;
}

const isUniqueViolation = (error: unknown) => {
  const e = error as { code?: unknown; message?: string } | null;
  return e?.code === "P2002" || /unique constraint/i.test(e?.message ?? "");
};

export class ScoreService {
  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      events?: EventPublisher;
      /** Told of every score committed (the OTLP exporter, where one runs in this process). */
      scored?: { notify?: (scoreId: string) => void };
    },
  ) {}

  /** Creates a config; a config of the same name with exactly these settings is returned as it is (idempotent), other settings are refused. */
  async createConfig(actor: Actor, input: ScoreConfigInput): Promise<ScoreConfig> {
    const settings = scoreConfigSettings(input);
    const existing = () => this.deps.prisma.scoreConfig.findUnique({ where: { ownerId_name: { ownerId: actor.principalId, name: settings.name } } });
    const same = (config: ScoreConfig) => {
      if (sameSettings(config, settings)) return config;
      throw new ValidationError([{ field: "name", message: `you already have a score config "${settings.name}" with other settings` }]);
    };
    const found = await existing();
    if (found) return same(found);
    try {
      // Counted and created under the principal's row lock: creates side by side count each other's.
      return await this.deps.prisma.$transaction(async (tx) => {
        await lockPrincipalRow(tx, actor.principalId);
        const created = await tx.scoreConfig.findUnique({ where: { ownerId_name: { ownerId: actor.principalId, name: settings.name } } });
        if (created) return same(created);
        if ((await tx.scoreConfig.count({ where: { ownerId: actor.principalId } })) >= SCORE_CONFIGS_PER_PRINCIPAL_MAX) {
          throw new ValidationError([{ field: "name", message: `at most ${SCORE_CONFIGS_PER_PRINCIPAL_MAX} score configs per principal` }]);
        }
        return tx.scoreConfig.create({ data: { ownerId: actor.principalId, ...settings } });
      });
    } catch (error) {
      // Created concurrently under the same name: the same answer as if it had come first.
      if (!isUniqueViolation(error)) throw error;
      return same((await existing())!);
    }
  }

  /** Scores a target the actor's principal owns; the same idempotency key with the same request returns the same score. */
  async create(actor: Actor, input: CreateScoreInput): Promise<Score> {
    const text = parseInput(scoreText, { comment: input.comment, idempotencyKey: input.idempotencyKey });
    const target = await this.ownedTarget(actor.principalId, input.targetId);
    const config = await this.deps.prisma.scoreConfig.findUnique({ where: { ownerId_name: { ownerId: actor.principalId, name: input.configName } } });
    if (!config) throw new NotFoundError("ScoreConfig", input.configName);
    const reading = scoreReading(config, input.value, input.label);
    const data = {
      ownerId: actor.principalId,
      configId: config.id,
      targetKind: target.kind,
      targetId: target.id,
      ...reading,
      comment: text.comment ?? null,
      source: input.source,
    };
    const key = text.idempotencyKey ?? null;
    const fingerprint = key === null ? null : createHash("sha256").update(JSON.stringify(data)).digest("hex");
    // An access token's keys are its grants' own: another end user's token may use the same key.
    const scope = idempotencyScopeOf(actor);
    const replay = async () => {
      const earlier = await this.deps.prisma.score.findUnique({
        where: { ownerId_idempotencyScope_idempotencyKey: { ownerId: actor.principalId, idempotencyScope: scope, idempotencyKey: key! } },
      });
      if (!earlier) return null;
      if (earlier.fingerprint !== fingerprint) throw new IdempotencyConflictError(key!);
      return earlier;
    };
    if (key !== null) {
      const earlier = await replay();
      if (earlier) return earlier;
    }
    const after: AfterCommit = [];
    try {
      const score = await this.deps.prisma.$transaction(async (tx) => {
        const created = await tx.score.create({
          data: { ...data, createdById: actor.principalId, credential: credentialOf(actor), idempotencyScope: scope, idempotencyKey: key, fingerprint },
        });
        await this.recordEvent(tx, created, config, after);
        return created;
      });
      runAfterCommit(after);
      this.deps.scored?.notify?.(score.id);
      return score;
    } catch (error) {
      // The same key, used concurrently: the request that committed first made the score.
      if (key === null || !isUniqueViolation(error)) throw error;
      const earlier = await replay();
      if (!earlier) throw error;
      return earlier;
    }
  }

  /** The newest HUMAN scores of these publication versions (what the next run is shown). */
  humanScores(ownerId: string, versionIds: readonly string[]): Promise<Map<string, HumanScores>> {
    return humanScoresOf(this.deps.prisma, ownerId, versionIds);
  }

  /**
   * Deletes one of the principal's scores; it answers NotFound for any other id. An access token
   * deletes only the scores it made: the team's own (a HUMAN score later runs are shown) are not
   * its holder's to remove.
   */
  async delete(actor: Actor, scoreId: string): Promise<Score> {
    const where = { id: scoreId, ownerId: actor.principalId, ...(actor.access ? { credential: credentialOf(actor) } : {}) };
    const score = await this.deps.prisma.score.findFirst({ where });
    if (!score) throw new NotFoundError("Score", scoreId);
    const deleted = await this.deps.prisma.score.deleteMany({ where });
    if (deleted.count === 0) throw new NotFoundError("Score", scoreId);
    return score;
  }

  /** The target a global id names, if the principal owns it (a checkpoint version of a deleted workspace is gone). */
  async ownedTarget(ownerId: string, globalId: string): Promise<{ kind: ScoreTargetKind; id: string }> {
    const decoded = decodeGlobalId(globalId);
    const kind = decoded ? SCORE_TARGETS[decoded.typename] : undefined;
    if (!decoded || !kind) {
      throw new ValidationError([{ field: "targetId", message: "is not the id of a Run, PublicationVersion, Span or CheckpointVersion" }]);
    }
    const { id } = decoded;
    const prisma = this.deps.prisma;
    const found =
      kind === "RUN"
        ? await prisma.run.count({ where: { id, ownerId } })
        : kind === "PUBLICATION_VERSION"
          ? await prisma.publicationVersion.count({ where: { id, publication: { ownerId } } })
          : kind === "SPAN"
            ? await prisma.span.count({ where: { id, trace: { run: { ownerId } } } })
            : await prisma.checkpointVersion.count({ where: { id, workspace: { ownerId, deletedAt: null } } });
    if (found === 0) throw new NotFoundError(decoded.typename, globalId);
    return { kind, id };
  }

  private recordEvent(tx: Prisma.TransactionClient, score: Score, config: ScoreConfig, after: AfterCommit): Promise<void> {
    const reading = score.label ?? String(score.value);
    return recordWebhookEvent(
      tx,
      {
        ownerId: score.ownerId,
        type: "SCORE_CREATED",
        at: score.createdAt,
        data: {
          scoreId: encodeGlobalId("Score", score.id),
          targetId: encodeGlobalId(TARGET_TYPENAMES[score.targetKind], score.targetId),
          targetType: TARGET_TYPENAMES[score.targetKind],
          configName: config.name,
          value: score.value,
          label: score.label,
          source: score.source,
          summary: `${score.source.toLowerCase()} score "${config.name}" = ${reading} on a ${TARGET_TYPENAMES[score.targetKind]}`,
        },
      },
      this.deps.events && { events: this.deps.events, after },
    );
  }
}

export type ScoreSummaryRow = { configName: string; count: number; mean: number | null; labelCounts: { label: string; count: number }[] };

/** A target's scores per config, counted and averaged in SQL (two GROUP BYs on the target's index), by config name. */
export async function scoreSummary(prisma: PrismaClient, targetKind: ScoreTargetKind, targetId: string): Promise<ScoreSummaryRow[]> {
  const where = { targetKind, targetId };
  // A target's scores are its owner's, on its owner's configs: at most SCORE_CONFIGS_PER_PRINCIPAL_MAX (createConfig counts them
  // under the principal's row lock, and none is deleted), each with at most SCORE_CATEGORIES_MAX labels (BOOLEAN: 2).
  const [perConfig, perLabel] = await Promise.all([
    prisma.score.groupBy({
      by: ["configId"],
      where,
      _count: { _all: true },
      _avg: { value: true },
      orderBy: { configId: "asc" },
      take: SCORE_CONFIGS_PER_PRINCIPAL_MAX,
    }),
    prisma.score.groupBy({
      by: ["configId", "label"],
      where: { ...where, label: { not: null } },
      _count: { _all: true },
      orderBy: [{ configId: "asc" }, { label: "asc" }],
      take: SCORE_CONFIGS_PER_PRINCIPAL_MAX * SCORE_CATEGORIES_MAX,
    }),
  ]);
  if (perConfig.length === 0) return [];
  const configs = await prisma.scoreConfig.findMany({
    where: { id: { in: perConfig.map((row) => row.configId) } },
    select: { id: true, name: true },
    take: perConfig.length,
  });
  const names = new Map(configs.map((c) => [c.id, c.name]));
  return perConfig
    .map((row) => ({
      configName: names.get(row.configId) ?? "",
      count: row._count._all,
      mean: row._avg.value,
      labelCounts: perLabel
        .filter((l) => l.configId === row.configId)
        .map((l) => ({ label: l.label!, count: l._count._all }))
        .sort((a, b) => b.count - a.count || a.label.localeCompare(b.label)),
    }))
    .sort((a, b) => a.configName.localeCompare(b.configName));
}
