// The settings of an app's own sign-in (config.ts reads them with the rest of the environment):
// requests bearing a JWT from the operator's identity provider act as the principal its claim
// names (domain/principal/sign-in-tokens.ts).
import { z } from "zod";
import { ConfigError, exactHosts } from "./config-rules.js";

/** The issuer of Dossier's own access tokens: a sign-in issuer may never be it. */
const DOSSIER_ISSUER = "dossier";

export const signInEnv = {
  AUTH_JWKS_URL: z
    .string()
    .refine(
      (value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol),
      "must be an http(s) URL such as https://auth.example.com/.well-known/jwks.json",
    )
    .optional(),
  AUTH_JWT_ISSUER: z.string().min(1).max(500).optional(),
  AUTH_JWT_AUDIENCE: z.string().min(1).max(500).optional(),
  AUTH_JWT_PRINCIPAL_CLAIM: z
    .string()
    .regex(/^[A-Za-z0-9_.:/-]{1,100}$/, "must be a claim name such as sub or email")
    .optional(),
  // Named exactly, as MCP_HTTP_ALLOWED_HOSTS: the JWKS is read through the outbound guard.
  AUTH_JWKS_ALLOWED_HOSTS: exactHosts("auth.internal.example,127.0.0.1:8080").default([]),
};

export type SignInSettings = {
  /** Where the identity provider publishes its public keys (AUTH_JWKS_URL). */
  jwksUrl: string;
  /** The `iss` every token must carry (AUTH_JWT_ISSUER) and the `aud` it must name (AUTH_JWT_AUDIENCE). */
  issuer: string;
  audience: string;
  /** The claim naming the principal (AUTH_JWT_PRINCIPAL_CLAIM, default `sub`). */
  principalClaim: string;
  /** Hosts the JWKS may be read from although they are inside the network (AUTH_JWKS_ALLOWED_HOSTS). */
  allowedHosts: string[];
};

type SignInValues = {
  AUTH_JWKS_URL?: string;
  AUTH_JWT_ISSUER?: string;
  AUTH_JWT_AUDIENCE?: string;
  AUTH_JWT_PRINCIPAL_CLAIM?: string;
  AUTH_JWKS_ALLOWED_HOSTS: string[];
};

/**
 * The app's own sign-in, when configured: AUTH_JWKS_URL, AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE go
 * together (a token checked against fewer would be accepted from any app of the same provider).
 * Every inconsistent combination is a start error naming the setting.
 */
export function signInOf(values: SignInValues): SignInSettings | undefined {
  const required = ["AUTH_JWKS_URL", "AUTH_JWT_ISSUER", "AUTH_JWT_AUDIENCE"] as const;
  const given = required.filter((name) => values[name] !== undefined);
  if (given.length === 0) {
    if (values.AUTH_JWT_PRINCIPAL_CLAIM !== undefined)
      throw new ConfigError(["AUTH_JWT_PRINCIPAL_CLAIM: applies only with AUTH_JWKS_URL, AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE"]);
    return undefined;
  }
  const problems = required
    .filter((name) => values[name] === undefined)
    .map((name) => `${name}: must be set with ${given.join(" and ")} (the app's own sign-in needs all three)`);
  if (values.AUTH_JWT_ISSUER === DOSSIER_ISSUER) problems.push(`AUTH_JWT_ISSUER: must not be "${DOSSIER_ISSUER}", the issuer of Dossier's own access tokens`);
  const url = values.AUTH_JWKS_URL ? new URL(values.AUTH_JWKS_URL) : undefined;
  const hostPort = url ? `${url.hostname.toLowerCase()}:${url.port || (url.protocol === "https:" ? "443" : "80")}` : "";
  const listed = values.AUTH_JWKS_ALLOWED_HOSTS.some((host) => host === hostPort || host === url?.hostname.toLowerCase());
  // Keys read in clear over the internet could be replaced on the way: http only for a host the operator named.
  if (url?.protocol === "http:" && !listed) problems.push(`AUTH_JWKS_URL: must be https:// unless its host is listed in AUTH_JWKS_ALLOWED_HOSTS`);
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    jwksUrl: values.AUTH_JWKS_URL!,
    issuer: values.AUTH_JWT_ISSUER!,
    audience: values.AUTH_JWT_AUDIENCE!,
    principalClaim: values.AUTH_JWT_PRINCIPAL_CLAIM ?? "sub",
    allowedHosts: values.AUTH_JWKS_ALLOWED_HOSTS,
  };
}
