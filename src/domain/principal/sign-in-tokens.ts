// An app's own sign-in (AUTH_JWKS_URL): a request bearing a JWT that the operator's identity
// provider signed acts as the principal the configured claim names, created the first time it is
// seen. Each end user of the app is its own principal, isolated like any other.
//
// Verified with `jose` against the provider's JWKS, read through the outbound guard (the caller
// passes its `fetch`), kept for ten minutes, and read again when a token names a key (`kid`) it
// does not hold — at most once per cooldown, so tokens with made-up kids cannot hammer it. Only
// asymmetric algorithms: a JWKS publishes public keys.
//
// Told apart from Dossier's own credentials before anything is verified: an API key is not a JWT,
// and an access token carries `typ: dossier-access+jwt` (and issuer `dossier`, which
// AUTH_JWT_ISSUER may not be).
import { createRemoteJWKSet, customFetch, errors, type JWTPayload, jwtVerify } from "jose";
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { Actor } from "./principal-service.js";

export type SignInVerifierSettings = {
  jwksUrl: string;
  issuer: string;
  audience: string;
  principalClaim: string;
};

/** Why a sign-in token was refused (the 401's message), or why its keys could not be read (`unavailable`: 503). */
export class SignInRefusal extends Error {
  constructor(
    message: string,
    readonly unavailable = false,
  ) {
    super(message);
  }
}

const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
const NAME_MAX = 100;

export class SignInTokens {
  private readonly keys: ReturnType<typeof createRemoteJWKSet>;

  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      settings: SignInVerifierSettings;
      /** The outbound guard's fetch: the JWKS host is checked like any other outbound URL. */
      fetch: typeof fetch;
      /** How long after a read of the JWKS no other read is made, even for an unknown kid (default 30 s). */
      cooldownMs?: number;
      /** How long a JWKS read is kept (default 10 minutes). */
      cacheMaxAgeMs?: number;
      now?: () => Date;
    },
  ) {
    this.keys = createRemoteJWKSet(new URL(deps.settings.jwksUrl), {
      cooldownDuration: deps.cooldownMs ?? 30_000,
      cacheMaxAge: deps.cacheMaxAgeMs ?? 600_000,
      timeoutDuration: 5_000,
      [customFetch]: (url, options) => deps.fetch(url, { ...options, redirect: "manual" } as RequestInit),
    });
  }

  /** The actor a sign-in token acts as; SignInRefusal saying why when it is not valid. */
  async verify(token: string): Promise<Actor> {
    const { settings } = this.deps;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        issuer: settings.issuer,
        audience: settings.audience,
        algorithms: ALGORITHMS,
        // A token without an expiry would act for its user for ever, however it leaked.
        requiredClaims: ["exp"],
        currentDate: this.deps.now?.(),
      }));
    } catch (error) {
      throw refusalOf(error);
    }
    const claim = payload[settings.principalClaim];
    if ((typeof claim !== "string" && typeof claim !== "number") || String(claim).trim() === "") {
      throw new SignInRefusal(`The sign-in token has no \`${settings.principalClaim}\` claim naming its user.`);
    }
    const expiresAt = expiryOfToken(payload);
    const principalId = await this.principalFor(String(claim));
    // Its own credential for rate limits and subscription quotas: no API key is involved.
    return { principalId, credentialId: `sign-in:${principalId}`, credentialExpiresAt: expiresAt };
  }

  /** The principal of an end user, created on first sight; two first requests at once create one. */
  private async principalFor(claim: string): Promise<string> {
    const signInSubject = `${this.deps.settings.issuer} ${claim}`;
    const { prisma } = this.deps;
    const existing = await prisma.principal.findUnique({ where: { signInSubject }, select: { id: true } });
    if (existing) return existing.id;
    try {
      return (await prisma.principal.create({ data: { name: claim.slice(0, NAME_MAX), signInSubject }, select: { id: true } })).id;
    } catch (error) {
      // Created meanwhile by a concurrent first request: the unique subject holds one row.
      if ((error as { code?: unknown }).code !== "P2002") throw error;
      return (await prisma.principal.findUniqueOrThrow({ where: { signInSubject }, select: { id: true } })).id;
    }
  }
}

/** The instant `exp` names (jose checked it is a number); one no date can hold is refused. */
function expiryOfToken(payload: JWTPayload): Date {
  const expiresAt = new Date((payload.exp as number) * 1000);
  if (Number.isNaN(expiresAt.getTime())) throw new SignInRefusal("The sign-in token's exp claim is not valid.");
  return expiresAt;
}

function refusalOf(error: unknown): SignInRefusal {
  if (error instanceof errors.JWTExpired) return new SignInRefusal("The sign-in token expired.");
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "iss") return new SignInRefusal("The sign-in token was not issued by this server's identity provider (iss).");
    if (error.claim === "aud") return new SignInRefusal("The sign-in token is not addressed to this server (aud).");
    if (error.claim === "nbf") return new SignInRefusal("The sign-in token is not valid yet (nbf).");
    if (error.claim === "exp" && error.reason === "missing") return new SignInRefusal("The sign-in token has no expiry (exp).");
    return new SignInRefusal(`The sign-in token's ${error.claim} claim is not valid.`);
  }
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) {
    return new SignInRefusal("The sign-in token was signed with a key the identity provider does not publish (kid).");
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return new SignInRefusal("The sign-in token's signature does not verify.");
  if (error instanceof errors.JOSEAlgNotAllowed) return new SignInRefusal("The sign-in token's algorithm is not accepted (alg).");
  // A JWKS that cannot be fetched or read (the base JOSEError is a non-200 answer): not the token's fault.
  const unreadable = error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid || (error as Error)?.constructor === errors.JOSEError;
  if (unreadable || !(error instanceof errors.JOSEError)) {
    return new SignInRefusal("The identity provider's keys cannot be read right now; try again shortly.", true);
  }
  return new SignInRefusal("Invalid sign-in token.");
}
