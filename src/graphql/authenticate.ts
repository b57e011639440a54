// Turns a request's credentials into the principal it acts for (A6). A wrong key is always
// rejected, never downgraded; a missing key is the development principal only when the
// operator did not require authentication.
import { GraphQLError } from "graphql";
import { decodeProtectedHeader } from "jose";
import { AccessTokenRefusal, AccessTokens } from "../domain/principal/access-tokens.js";
import type { Actor, PrincipalService } from "../domain/principal/principal-service.js";
import { SignInRefusal, type SignInTokens } from "../domain/principal/sign-in-tokens.js";

export type Authenticate = (authorization: string | null | undefined) => Promise<Actor>;

const unauthenticated = (message: string) => new GraphQLError(message, { extensions: { code: "UNAUTHENTICATED", http: { status: 401 } } });
/**
 * Refusals a flooding address is not held to: an access token signed by its key but expired (or
 * its key revoked), and a sign-in token refused by its signature or claims (no lookup): end users
 * behind one address whose tokens expire must not hold back its API keys.
 */
const uncounted = new WeakSet<GraphQLError>();
const uncountedRefusal = (message: string) => {
  const error = unauthenticated(message);
  uncounted.add(error);
  return error;
};
/** Whether a refusal is not counted as a failed authentication (see `uncounted`). */
export const isUncountedRefusal = (error: unknown): boolean => error instanceof GraphQLError && uncounted.has(error);
const unavailable = (message: string) => new GraphQLError(message, { extensions: { code: "SIGN_IN_UNAVAILABLE", http: { status: 503 } } });
/** Whether a refusal is only the identity provider's keys that cannot be read for a moment (503). */
export const isSignInUnavailable = (error: unknown): error is GraphQLError => error instanceof GraphQLError && error.extensions.code === "SIGN_IN_UNAVAILABLE";

/** Whether a Bearer value is a JWT (a JOSE header that decodes), without verifying it: API keys are not. */
function isJwt(value: string): boolean {
  try {
    decodeProtectedHeader(value);
    return value.split(".").length === 3;
  } catch {
    return false;
  }
}

export function createAuthenticator({
  principals,
  authRequired,
  accessTokens,
  signIn,
}: {
  principals: PrincipalService;
  authRequired: boolean;
  /** Verifies access tokens (createAccessToken); a Bearer value that is one is never taken for an API key. */
  accessTokens?: AccessTokens;
  /** Verifies the app's own sign-in tokens (AUTH_JWKS_URL): any other JWT, never taken for an API key either. */
  signIn?: SignInTokens;
}): Authenticate {
  let development: Promise<Actor> | undefined;
  return async (authorization) => {
    if (authorization == null || authorization.trim() === "") {
      if (authRequired) throw unauthenticated("An API key is required: send `Authorization: Bearer <key>`.");
      development ??= principals.ensureDevelopmentPrincipal().catch((error: unknown) => {
        development = undefined;
        throw error;
      });
      return development;
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match?.[1]) throw unauthenticated("The Authorization header must be `Bearer <key>`.");
    if (accessTokens && AccessTokens.isAccessToken(match[1])) {
      try {
        return await accessTokens.verify(match[1]);
      } catch (error) {
        if (error instanceof AccessTokenRefusal) throw error.signed ? uncountedRefusal(error.message) : unauthenticated(error.message);
        throw error;
      }
    }
    if (signIn && isJwt(match[1])) {
      try {
        return await signIn.verify(match[1]);
      } catch (error) {
        if (error instanceof SignInRefusal) throw error.unavailable ? unavailable(error.message) : uncountedRefusal(error.message);
        throw error;
      }
    }
    const actor = await principals.authenticate(match[1]);
    if (!actor) throw unauthenticated("Invalid API key.");
    return actor;
  };
}

/** The Authorization header sent in graphql-ws connection parameters, whatever its case. */
export function authorizationFromConnectionParams(params: Record<string, unknown> | undefined): string | undefined {
  const headers = (params?.headers ?? params) as Record<string, unknown> | undefined;
  if (!headers || typeof headers !== "object") return undefined;
  const entry = Object.entries(headers).find(([name]) => name.toLowerCase() === "authorization");
  return typeof entry?.[1] === "string" ? entry[1] : undefined;
}
