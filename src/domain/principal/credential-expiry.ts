// When the credential a request or a socket authenticated with stops being valid: an access
// token's `exp`, a sign-in token's. Expiry is decided by the server's clock at the moment
// something would be delivered, never only by a timer set earlier: a timer runs late when the
// process is busy, and what reaches a principal after its token expired must not depend on that.
import type { Actor } from "./principal-service.js";

/** When the actor's credential expires; none for an API key or the development principal. */
export const expiryOf = (actor: Actor): Date | undefined => actor.access?.expiresAt ?? actor.credentialExpiresAt;

/** Whether a credential expiring at `expiresAt` has expired by `now` (a token is valid strictly before its `exp`). */
export const hasExpired = (expiresAt: Date | undefined, now: () => Date): boolean => expiresAt !== undefined && now().getTime() >= expiresAt.getTime();

/** The longest delay a Node timer keeps: a longer one would fire at once. */
const LONGEST_TIMER_MS = 2_147_483_647;

/**
 * Calls `onExpired` once the clock reaches `expiresAt`. The timer is checked against the clock
 * when it fires and set again while the clock is short of the instant (a timer may fire a little
 * early, and an expiry weeks ahead takes several timers). The returned function stops it.
 */
export function atExpiry(expiresAt: Date, now: () => Date, onExpired: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const wait = Math.min(LONGEST_TIMER_MS, Math.max(0, expiresAt.getTime() - now().getTime()));
    timer = setTimeout(() => (hasExpired(expiresAt, now) ? onExpired() : arm()), wait);
  };
  arm();
  return () => clearTimeout(timer);
}
