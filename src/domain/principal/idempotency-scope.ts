// Whose of a principal's idempotency keys (admitRun's, createScore's, steerRun's) a request's key is (W5).
// The principal's API keys share one scope, "": a retry through another of its keys answers the
// same run. An access token's keys
// are its grants' own: "token:<minting key id>:<digest of the grants>". Another end user's token
// (other grants) may use the same key for its own run, unaware of the first and without taking it
// from them, while a token minted again for the same grants by the same key (the same end user's
// page after a refresh) replays what the one before it admitted. The digest does not depend on the
// order of the grants nor of their operations.
import { createHash } from "node:crypto";
import type { AccessScope } from "./access-scope.js";

/** Whose grants a credential acts under: its minting key, and its access token's grants when it has one. */
export type GrantHolder = { keyId?: string; access?: { grants: AccessScope["grants"] } };

/** The scope of the actor's idempotency keys: "" for a whole principal, its grants' for an access token. */
export function idempotencyScopeOf(actor: GrantHolder): string {
  if (!actor.access) return "";
  return `token:${actor.keyId ?? ""}:${grantsDigestOf(actor.access)}`;
}

const digests = new WeakMap<object, string>();

/** The digest of a token's grants, once per token a request or socket carries. */
function grantsDigestOf(access: { grants: AccessScope["grants"] }): string {
  let digest = digests.get(access);
  if (digest === undefined) {
    const grants = access.grants.map((grant) => `${grant.kind}:${grant.id}:${[...new Set(grant.operations)].sort().join(",")}`);
    digest = createHash("sha256")
      .update(JSON.stringify([...new Set(grants)].sort()))
      .digest("base64url");
    digests.set(access, digest);
  }
  return digest;
}
