// Principals and their API keys (A6). A key is a random secret shown once; only its SHA-256
// is stored, so the database never holds a usable key. A revoked key is refused by the next
// request (every request looks its key up), `apikey:revoked` tells every instance to close
// the subscriptions opened with it, and what follows the key changes once the revocation
// committed (`revoked`: the schedules it created, last updated or resumed pause). A key minted
// through a key (createApiKey) records it (createdByKeyId): revoking a key withKeysItMinted revokes
// every key it minted, and theirs, in the same statement, with the same effects for each — a leaked
// key's children are refused with it (also when the key itself was revoked before).
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import type { EventPublisher } from "../../events/topics.js";
import type { ApiKey, Prisma, Principal, PrismaClient } from "../../generated/prisma/client.js";
import { ApiKeyLimitError, ForbiddenError, NotFoundError, ValidationError } from "../errors.js";
import { ACCESS_OPERATIONS, type AccessOperation, type AccessScope } from "./access-scope.js";
import { nonBlank, parseInput } from "../validation.js";
import { NUMERIC_CAPS, narrowCaps, type RunCaps, runCapsInput, storedCaps } from "./run-caps.js";
import { lockPrincipalRow } from "./principal-lock.js";

/**
 * Who a request acts for. Every service method that touches owned data takes one. `keyId` is
 * the API key the request authenticated with (none for the development principal); `access`,
 * when present, narrows the principal to an access token's grants (graphql/access-grants.ts).
 */
export type Actor = {
  principalId: string;
  keyId?: string;
  /** A credential that is not an API key, for rate limits and quotas: a sign-in token's user (`sign-in:<principalId>`). */
  credentialId?: string;
  /** When that credential expires (a sign-in token's `exp`): sockets opened with it close then. */
  credentialExpiresAt?: Date;
  /** The operations the API key may perform (ApiKey.scopes); absent: all of them. */
  scopes?: readonly AccessOperation[];
  access?: AccessScope;
  /** The runs the key or token may admit (ApiKey.runCaps, a token's claims); absent: no cap beyond the server's. */
  runCaps?: RunCaps;
};

/** The scopes of a key made for an agent (`forAgent`): everything but DECIDE, which is a person's act. */
export const AGENT_KEY_SCOPES: readonly AccessOperation[] = ACCESS_OPERATIONS.filter((operation) => operation !== "DECIDE");

/** `lastUsedAt` is written at most this often per key: a request does not cost a write. */
export const LAST_USED_PRECISION_MS = 60_000;

/** MAX_API_KEYS_PER_PRINCIPAL's default. */
export const MAX_API_KEYS_DEFAULT = 100;

/** The principal of keyless requests when authentication is not required (embedded default). */
export const DEVELOPMENT_PRINCIPAL_ID = "development";

const nameInput = z.object({ name: nonBlank(100) });

/** The name a new principal is given, or a ValidationError saying why it cannot have this one. */
export const principalName = (name: string): string => parseInput(nameInput, { name }).name;
const keyInput = z.object({
  name: nonBlank(100),
  scopes: z.array(z.enum(ACCESS_OPERATIONS)).nullish(),
  forAgent: z.boolean().nullish(),
  runCaps: runCapsInput,
});

/**
 * The keys an actor may see and revoke: its principal's, and for an API key only those whose
 * scopes lie within its own and, for a capped key, whose run caps are at least as tight as its own
 * (each numeric cap set and no higher; an agents cap set, the agents themselves checked by
 * `capsWithin` before a revocation) — a narrow key cannot list, nor lock its owner out by
 * revoking, a wider one. Another key reads as absent, as another principal's does.
 */
export function keysWithin(actor: Pick<Actor, "principalId" | "scopes" | "runCaps">): Prisma.ApiKeyWhereInput {
  const lacking = ACCESS_OPERATIONS.filter((operation) => actor.scopes && !actor.scopes.includes(operation));
  const where: Prisma.ApiKeyWhereInput =
    lacking.length > 0 ? { principalId: actor.principalId, NOT: { scopes: { hasSome: lacking } } } : { principalId: actor.principalId };
  const caps = actor.runCaps;
  if (!caps) return where;
  // A key without a cap the actor has (its path absent) matches none of these: it is wider.
  const tighter: Prisma.ApiKeyWhereInput[] = NUMERIC_CAPS.flatMap((name) => (caps[name] === undefined ? [] : [{ runCaps: { path: [name], lte: caps[name] } }]));
  if (caps.agents) tighter.push({ runCaps: { path: ["agents"], array_contains: [] } });
  return { AND: [where, ...tighter] };
}

/** Whether a key's caps lie within the actor's: no cap of the actor's missing or wider, no agent outside its list. */
export function capsWithin(key: RunCaps | undefined, actor: RunCaps | undefined): boolean {
  if (!actor) return true;
  if (!key) return false;
  if (actor.agents && !(key.agents ?? []).every((agent) => actor.agents!.includes(agent))) return false;
  if (actor.agents && !key.agents) return false;
  return NUMERIC_CAPS.every((name) => actor[name] === undefined || (key[name] !== undefined && key[name]! <= actor[name]!));
}

export const hashApiKey = (secret: string): string => createHash("sha256").update(secret, "utf8").digest("hex");

/** A key's stored beginning: `dsk_` and 8 of its random characters. */
const PREFIX_LENGTH = 12;

function newSecret(): { secret: string; prefix: string; hash: string } {
  const secret = `dsk_${randomBytes(24).toString("base64url")}`;
  return { secret, prefix: secret.slice(0, PREFIX_LENGTH), hash: hashApiKey(secret) };
}

/**
 * What else a key's revocation changes, once it committed, best effort (it fails nothing): the
 * composition root gives the schedules' (schedules/revoked-keys.ts), which pauses the schedules
 * that follow the key.
 */
export type KeyRevocationEffects = (keyId: string) => Promise<void>;

export class PrincipalService {
  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      events: EventPublisher;
      revoked?: KeyRevocationEffects;
      /** The most live (unrevoked) API keys one principal may have (MAX_API_KEYS_PER_PRINCIPAL). */
      maxApiKeys?: number;
    },
  ) {}

  /** Creates a principal with its first key; the returned secret is not stored anywhere. */
  async createPrincipal(input: { name: string }): Promise<{ principal: Principal; apiKey: ApiKey; secret: string }> {
    const name = principalName(input.name);
    const { secret, prefix, hash } = newSecret();
    const principal = await this.deps.prisma.principal.create({
      data: { name, apiKeys: { create: { name: "first key", prefix, hash } } },
      include: { apiKeys: true },
    });
    const [apiKey] = principal.apiKeys;
    if (!apiKey) throw new Error("a new principal must have its first key");
    return { principal, apiKey, secret };
  }

  /** Gives the acting principal an additional key; ApiKeyLimitError when it has MAX_API_KEYS_PER_PRINCIPAL live ones. */
  async createApiKey(actor: Actor, input: z.input<typeof keyInput>): Promise<{ apiKey: ApiKey; secret: string }> {
    const { name, scopes, forAgent, runCaps: asked } = parseInput(keyInput, input);
    // A key gives no more than the key that made it: a narrow key cannot mint a wider one.
    const wanted = scopes ?? (forAgent ? AGENT_KEY_SCOPES : ACCESS_OPERATIONS);
    const beyond = wanted.filter((operation) => actor.scopes && !actor.scopes.includes(operation));
    if (beyond.length > 0) throw new ValidationError([{ field: "scopes", message: `may not exceed the calling key's (${beyond.join(", ")} missing)` }]);
    // Nor wider run caps: what the new key's omit, it inherits from the calling key's.
    const runCaps = narrowCaps(actor.runCaps, asked);
    const { secret, prefix, hash } = newSecret();
    // A principal's live keys are bounded: each is another rate-limit bucket and another credential
    // to revoke. The principal's row is locked for the count, so creates side by side never pass
    // the bound together. The revocation of the calling key takes the same lock (revoke): a key
    // minting while it is revoked either commits first (and its new key is revoked with it when the
    // revocation takes the keys it minted), or finds it revoked here and mints nothing.
    const max = this.deps.maxApiKeys ?? MAX_API_KEYS_DEFAULT;
    const apiKey = await this.deps.prisma.$transaction(async (tx) => {
      await lockPrincipalRow(tx, actor.principalId);
      if (actor.keyId && (await tx.apiKey.count({ where: { id: actor.keyId, revokedAt: null } })) === 0) {
        throw new ForbiddenError("This API key was revoked: it can no longer make keys.");
      }
      if ((await tx.apiKey.count({ where: { principalId: actor.principalId, revokedAt: null } })) >= max) throw new ApiKeyLimitError(max);
      const createdByKeyId = actor.keyId ?? null;
      return tx.apiKey.create({
        data: { principalId: actor.principalId, name, prefix, hash, scopes: [...new Set(wanted)], createdByKeyId, ...(runCaps ? { runCaps } : {}) },
      });
    });
    return { apiKey, secret };
  }

  /** The principal a key belongs to, or null for an unknown or revoked key. */
  async authenticate(secret: string): Promise<Actor | null> {
    const key = await this.deps.prisma.apiKey.findUnique({
      where: { hash: hashApiKey(secret) },
      select: { id: true, principalId: true, revokedAt: true, lastUsedAt: true, scopes: true, runCaps: true },
    });
    if (!key || key.revokedAt !== null) return null;
    const now = Date.now();
    if (key.lastUsedAt === null || now - key.lastUsedAt.getTime() >= LAST_USED_PRECISION_MS) {
      await this.deps.prisma.apiKey.updateMany({ where: { id: key.id, revokedAt: null }, data: { lastUsedAt: new Date(now) } });
    }
    const runCaps = storedCaps(key.runCaps);
    return { principalId: key.principalId, keyId: key.id, scopes: key.scopes as AccessOperation[], ...(runCaps ? { runCaps } : {}) };
  }

  /**
   * Revokes one of the actor's keys (the one in use included). Revoking a revoked key changes
   * nothing and returns it as it is; another principal's key, or one with a scope the calling
   * key lacks, is not found.
   */
  async revokeApiKey(actor: Actor, keyId: string, options: { withKeysItMinted?: boolean } = {}): Promise<ApiKey> {
    const key = await this.deps.prisma.apiKey.findFirst({ where: { AND: [{ id: keyId }, keysWithin(actor)] } });
    if (!key || !capsWithin(storedCaps(key.runCaps), actor.runCaps)) throw new NotFoundError("ApiKey", keyId);
    return this.revoke(key, options.withKeysItMinted ?? false);
  }

  /**
   * The operator's revocation (`npm run key:revoke`): by the key's prefix as `apiKeys` shows it
   * (or its first 8 characters or more), or by the whole key. A prefix shared by several keys is
   * refused, naming them.
   */
  async revokeApiKeyByPrefix(prefixOrKey: string): Promise<ApiKey & { principal: Principal }> {
    const given = prefixOrKey.trim();
    if (given.length < 8) throw new ValidationError([{ field: "prefix", message: "must be at least 8 characters, e.g. dsk_3f9a1c2b" }]);
    const where = given.length > PREFIX_LENGTH ? { hash: hashApiKey(given) } : { prefix: { startsWith: given } };
    const keys = await this.deps.prisma.apiKey.findMany({ where, include: { principal: true }, take: 10 });
    if (keys.length === 0) throw new NotFoundError("ApiKey", given);
    if (keys.length > 1) {
      const names = keys.map((key) => `"${key.name}" of ${key.principal.name}`).join(", ");
      throw new ValidationError([{ field: "prefix", message: `is shared by ${keys.length} keys (${names}): give the whole key` }]);
    }
    const [key] = keys as [ApiKey & { principal: Principal }];
    return { ...(await this.revoke(key)), principal: key.principal };
  }

  /**
   * Revokes the key and, `withMinted`, every live key it minted, and theirs, in one statement, so they are refused
   * as soon as that committed, whatever holds what follows them; then changes what follows each
   * (`revoked`), which cannot undo the revocation. The principal's row is locked first, as a
   * minting key's createApiKey locks it: the statement, which starts once the lock is held, sees
   * every key minted before, and a key minting after finds itself revoked.
   */
  private async revoke(key: ApiKey, withMinted = false): Promise<ApiKey> {
    // Revoked before: asked for the keys it minted, they are still revoked (its own time stands).
    if (key.revokedAt !== null && !withMinted) return key;
    const revokedAt = new Date();
    const revoked = await this.deps.prisma.$transaction(async (tx) => {
      await lockPrincipalRow(tx, key.principalId);
      const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
        `WITH RECURSIVE tree AS (
           SELECT id FROM api_key WHERE id = $1
           UNION SELECT k.id FROM api_key k JOIN tree ON k.created_by_key_id = tree.id WHERE $3)
         UPDATE api_key SET revoked_at = $2 WHERE id IN (SELECT id FROM tree) AND revoked_at IS NULL RETURNING id`,
        key.id,
        revokedAt,
        withMinted,
      );
      return rows.map((row) => row.id);
    });
    for (const keyId of revoked) this.deps.events.publish("apikey:revoked", { keyId, at: revokedAt.toISOString() });
    for (const keyId of revoked) await this.deps.revoked?.(keyId);
    // Revoked concurrently by another request: the first revocation's time stands.
    if (!revoked.includes(key.id)) return this.deps.prisma.apiKey.findUniqueOrThrow({ where: { id: key.id } });
    return { ...key, revokedAt };
  }

  async ensureDevelopmentPrincipal(): Promise<Actor> {
    await this.deps.prisma.principal.upsert({
      where: { id: DEVELOPMENT_PRINCIPAL_ID },
      create: { id: DEVELOPMENT_PRINCIPAL_ID, name: "Development principal" },
      update: {},
    });
    return { principalId: DEVELOPMENT_PRINCIPAL_ID };
  }
}
