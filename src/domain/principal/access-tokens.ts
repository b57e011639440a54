// Short-lived access tokens for browsers: an API key mints one for a few resources and
// operations (createAccessToken), the team's backend hands it to a page, and the page calls
// Dossier with it directly. A token is a JWT signed and verified with `jose` (HS256), under a key
// derived from the minting API key's stored hash and the server's SECRETS_KEY: every request
// looks that API key up, so revoking it refuses its tokens at once, and nobody without both
// pieces can sign one. The token carries its grants and its run caps (within its key's: run-caps.ts);
// nothing is stored per token.
import { createHmac, randomUUID } from "node:crypto";
import { decodeProtectedHeader, errors, jwtVerify, SignJWT } from "jose";
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { SecretBox } from "../secret-box.js";
import { ForbiddenError, NotFoundError } from "../errors.js";
import { decodeGlobalId } from "../global-id.js";
import { parseInput } from "../validation.js";
import { ACCESS_OPERATIONS, type AccessGrant, type AccessScope, type GrantedKind } from "./access-scope.js";
import type { Actor } from "./principal-service.js";
import { narrowCaps, runCapsInput, storedCaps, tighterCaps } from "./run-caps.js";

/** The JOSE `typ` of Dossier's access tokens: a Bearer value with it is verified here, not as a sign-in JWT. */
export const ACCESS_TOKEN_TYPE = "dossier-access+jwt";
const ISSUER = "dossier";
export const DEFAULT_TOKEN_SECONDS = 900;
export const MAX_TOKEN_SECONDS = 3_600;

const mintInput = z.object({
  grants: z
    .array(
      z.object({
        resourceId: z.string().min(1).max(200),
        operations: z.array(z.enum(ACCESS_OPERATIONS)).min(1, "must name at least one operation"),
      }),
    )
    .min(1, "must grant at least one resource")
    .max(20, "at most 20 grants per token"),
  expiresInSeconds: z
    .number()
    .int()
    .min(1, `must be from 1 to ${MAX_TOKEN_SECONDS}`)
    .max(MAX_TOKEN_SECONDS, `must be from 1 to ${MAX_TOKEN_SECONDS}`)
    .nullish(),
  label: z.string().max(100).nullish(),
  endUser: z
    .string()
    .min(1, "must not be empty")
    .max(200, "at most 200 characters")
    .refine((name) => ![...name].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f), "must hold no control characters")
    .nullish(),
  runCaps: runCapsInput,
});

export type MintAccessTokenInput = z.input<typeof mintInput>;

/** Why a Bearer token that is one of Dossier's access tokens was refused (the 401's message). */
/** Why a token is refused; `signed`: it was signed by its key (expired, or its key revoked), not forged. */
export class AccessTokenRefusal extends Error {
  constructor(
    message: string,
    readonly signed = false,
  ) {
    super(message);
  }
}

export const TOKEN_EXPIRED = "token expired";

/** Whether a token's `kid` can name an API key: a short string of letters, digits, `_` and `-`. */
const isKeyId = (kid: unknown): kid is string => typeof kid === "string" && /^[\w-]{1,100}$/.test(kid);

export class AccessTokens {
  constructor(private readonly deps: { prisma: PrismaClient; secrets?: SecretBox; now?: () => Date }) {}

  /** A token for the actor's own resources; only a whole API key may mint one. */
  async mint(actor: Actor, input: MintAccessTokenInput): Promise<{ token: string; expiresAt: Date }> {
    if (actor.access) throw new ForbiddenError("An access token cannot mint access tokens: use an API key.");
    if (!actor.keyId) throw new ForbiddenError("Only an API key can mint access tokens: send `Authorization: Bearer <API key>`.");
    const parsed = parseInput(mintInput, input);
    const beyond = parsed.grants.flatMap((grant) => grant.operations).filter((operation) => actor.scopes && !actor.scopes.includes(operation));
    if (beyond.length > 0) throw new ForbiddenError(`This API key may not grant what it may not do itself (${[...new Set(beyond)].join(", ")}).`);
    const grants = await Promise.all(parsed.grants.map((grant) => this.resolveGrant(actor, grant.resourceId, grant.operations)));
    const key = await this.deps.prisma.apiKey.findUniqueOrThrow({ where: { id: actor.keyId }, select: { hash: true, runCaps: true } });
    // Within the minting key's run caps: what the token's omit, it inherits.
    const caps = narrowCaps(storedCaps(key.runCaps), parsed.runCaps);
    const now = this.now();
    const expiresAt = new Date(now.getTime() + (parsed.expiresInSeconds ?? DEFAULT_TOKEN_SECONDS) * 1000);
    const claims = {
      grants: grants.map((g) => ({ k: g.kind, i: g.id, o: g.operations })),
      ...(parsed.label ? { label: parsed.label } : {}),
      ...(parsed.endUser ? { eu: parsed.endUser } : {}),
      ...(caps ? { caps } : {}),
    };
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256", kid: actor.keyId, typ: ACCESS_TOKEN_TYPE })
      .setSubject(actor.principalId)
      .setIssuer(ISSUER)
      .setAudience(ISSUER)
      .setIssuedAt(Math.floor(now.getTime() / 1000))
      .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
      .setJti(randomUUID())
      .sign(this.signingKey(key.hash));
    return { token, expiresAt: new Date(Math.floor(expiresAt.getTime() / 1000) * 1000) };
  }

  /** Whether a Bearer value is one of these tokens (by its JOSE header), without verifying it. */
  static isAccessToken(value: string): boolean {
    try {
      return decodeProtectedHeader(value).typ === ACCESS_TOKEN_TYPE;
    } catch {
      return false;
    }
  }

  /** The actor a token acts as; AccessTokenRefusal saying why when it is expired, forged or its key revoked. */
  async verify(token: string): Promise<Actor> {
    // The header is the sender's: a kid that is no key's id (a number, an object) is refused unread.
    const { kid } = decodeProtectedHeader(token) as { kid?: unknown };
    const key = isKeyId(kid)
      ? await this.deps.prisma.apiKey.findUnique({ where: { id: kid }, select: { id: true, hash: true, principalId: true, revokedAt: true, runCaps: true } })
      : null;
    if (!key) throw new AccessTokenRefusal("Invalid access token.");
    let payload: Record<string, unknown> | undefined;
    let expired = false;
    try {
      ({ payload } = await jwtVerify(token, this.signingKey(key.hash), {
        algorithms: ["HS256"],
        issuer: ISSUER,
        audience: ISSUER,
        typ: ACCESS_TOKEN_TYPE,
        subject: key.principalId,
        currentDate: this.now(),
      }));
    } catch (error) {
      // Its signature verified before its expiry was read.
      if (!(error instanceof errors.JWTExpired)) throw new AccessTokenRefusal("Invalid access token.");
      expired = true;
    }
    if (key.revokedAt) throw new AccessTokenRefusal("The API key that issued this access token was revoked.", true);
    if (expired || !payload) throw new AccessTokenRefusal(`The access token expired (${TOKEN_EXPIRED}).`, true);
    const scope: AccessScope = {
      tokenId: String(payload.jti),
      expiresAt: new Date(Number(payload.exp) * 1000),
      grants: (payload.grants as { k: GrantedKind; i: string; o: AccessGrant["operations"] }[]).map((g) => ({ kind: g.k, id: g.i, operations: g.o })),
      ...(typeof payload.eu === "string" ? { endUser: payload.eu } : {}),
    };
    // The token's caps lie within its key's when minted; held to the key's too, whatever it carries.
    const runCaps = tighterCaps(storedCaps(payload.caps), storedCaps(key.runCaps));
    return { principalId: key.principalId, keyId: key.id, access: scope, ...(runCaps ? { runCaps } : {}) };
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  private signingKey(keyHash: string): Uint8Array {
    const pepper = this.deps.secrets?.derive("dossier access tokens") ?? Buffer.from("dossier access tokens");
    return createHmac("sha256", pepper).update(keyHash, "utf8").digest();
  }

  /** The grant of one of the actor's own workspaces, conversations or runs; NotFound for anything else. */
  private async resolveGrant(actor: Actor, resourceId: string, operations: AccessGrant["operations"]): Promise<AccessGrant> {
    const decoded = decodeGlobalId(resourceId);
    const owner = { ownerId: actor.principalId };
    const { prisma } = this.deps;
    const found =
      decoded?.typename === "Workspace"
        ? await prisma.workspace.findFirst({ where: { id: decoded.id, deletedAt: null, ...owner }, select: { id: true } })
        : decoded?.typename === "Conversation"
          ? await prisma.conversation.findFirst({ where: { id: decoded.id, ...owner }, select: { id: true } })
          : decoded?.typename === "Run"
            ? await prisma.run.findFirst({ where: { id: decoded.id, ...owner }, select: { id: true } })
            : null;
    if (!decoded || !found) throw new NotFoundError("Resource", resourceId);
    return { kind: decoded.typename as GrantedKind, id: found.id, operations: [...new Set(operations)] };
  }
}
