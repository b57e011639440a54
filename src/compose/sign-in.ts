// The app's own sign-in of a server process (AUTH_JWKS_URL): the verifier of its tokens, reading
// the identity provider's keys through an outbound guard of its own (AUTH_JWKS_ALLOWED_HOSTS).
import type { SignInSettings } from "../config-sign-in.js";
import { SignInTokens } from "../domain/principal/sign-in-tokens.js";
import type { PrismaClient } from "../generated/prisma/client.js";
import { createOutboundHttp, type Resolver } from "../outbound/outbound-http.js";

export type SignInOptions = SignInSettings & {
  /** Resolves the JWKS host's name (tests replace it). */
  resolve?: Resolver;
  /** How long after a JWKS read an unknown kid does not cause another (default 30 s). */
  cooldownMs?: number;
};

export function openSignIn(prisma: PrismaClient, options: SignInOptions, now?: () => Date): { tokens: SignInTokens; close(): Promise<void> } {
  const outbound = createOutboundHttp({ allowedHosts: options.allowedHosts, setting: "AUTH_JWKS_ALLOWED_HOSTS", resolve: options.resolve });
  const tokens = new SignInTokens({ prisma, settings: options, fetch: outbound.fetch, cooldownMs: options.cooldownMs, now });
  return { tokens, close: () => outbound.close() };
}
