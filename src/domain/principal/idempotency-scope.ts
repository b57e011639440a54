// Whose of a principal's idempotency keys (admitRun's, createScore's, steerRun's) a request's key is (W5).
// The principal's API keys share one scope, "": a retry through another of its keys answers the
// same run. An access token's keys
// are its grants' own: "token:<minting key id>:<digest of the grants>". Another end user's token
// (other grants) may use the same key for its own run, unaware of the first and without taking it
// from them, while a token minted again for the same grants by the same key (the same end user's
// page after a refresh) replays what the one before it admitted. A token minted for a named end user
// (createAccessToken's endUser) has that end user's keys: another end user's, with the same grants,
// has its own. The digest does not depend on the
// order of the grants nor of their operations.
import { createHash } from "node:crypto";
import type { Actor } from "./principal-service.js";

/** The scope of the actor's idempotency keys: "" for a whole principal, its grants' for an access token. */
export function idempotencyScopeOf(actor: Pick<Actor, "keyId" | "access">): string {
  if (!actor.access) return "";
  const grants = actor.access.grants.map((grant) => `${grant.kind}:${grant.id}:${[...new Set(grant.operations)].sort().join(",")}`);
  // An end user the minting backend named (endUser) has its own keys, whatever grants others hold.
  const sorted = [...new Set(grants)].sort();
  const { endUser } = actor.access;
  const digest = createHash("sha256")
    .update(JSON.stringify(endUser === undefined ? sorted : [sorted, endUser]))
    .digest("base64url");
  return `token:${actor.keyId ?? ""}:${digest}`;
}
