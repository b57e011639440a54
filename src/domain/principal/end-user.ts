// Whose share of a principal's request rate and subscription places an access token draws on
// (rate-limit.ts, subscription-quota.ts): its end user's. The team's backend names the end user
// when it mints the token (createAccessToken's endUser): every token minted for that end user, by
// any key of the principal — a page reloaded, another tab, a token minted again on purpose —
// shares one bucket and one set of places, so fresh tokens win no fresh share, while end users
// with the same grants (viewers of one shared workspace) keep theirs apart. A token minted without
// one is an end user of its own.

/** The end user a token's request counts against: `end-user:<principal>:<name>`, or `token:<id>` for a token minted without one. */
export function endUserOf(principalId: string | undefined, access: { tokenId: string; endUser?: string }): string {
  return access.endUser === undefined ? `token:${access.tokenId}` : `end-user:${principalId ?? ""}:${access.endUser}`;
}
