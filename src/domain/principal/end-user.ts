// Whose share of a principal's request rate, subscription places and queued places an access token
// draws on (rate-limit.ts, subscription-quota.ts, queue-gate.ts): its end user's. The team's backend
// names the end user when it mints the token (createAccessToken's endUser): every token one key mints
// for that end user — a page reloaded, another tab, a token minted again on purpose — shares one
// bucket and one set of places, so fresh tokens win no fresh share, while end users with the same
// grants (viewers of one shared workspace) keep theirs apart. The name is the minting key's: another
// key of the principal (an agent's) minting for "alice" draws on a share of its own, never on the
// one of the backend's alice. A token minted without one is an end user of its own.

/** What of an access token says whose end user it is (AccessScope's fields). */
export type EndUserAccess = { tokenId: string; endUser?: string };

/** The end user a token's request counts against: `end-user:<minting key>:<name>`, or `token:<id>` for a token minted without one. */
export function endUserOf(keyId: string | undefined, access: EndUserAccess): string {
  return access.endUser === undefined ? `token:${access.tokenId}` : `end-user:${keyId ?? ""}:${access.endUser}`;
}
