// A graphql-ws socket lives as long as the credential it was opened with: a token's socket closes
// with 4401 "token expired" when the token does, a revoked key's with 4403 "API key revoked"
// (clients retry neither). A timer closes it at the instant, but a timer runs late when the
// process is busy, so the socket's credential is also looked at before every message it sends and
// every operation it starts: nothing is delivered after the token expired, and an operation sent in
// the last moment ends the socket the documented way, not with an internal error (4500, which
// clients retry with the same expired token).
import { GraphQLError } from "graphql";
import { TOKEN_EXPIRED } from "../domain/principal/access-tokens.js";
import { atExpiry, expiryOf, hasExpired } from "../domain/principal/credential-expiry.js";
import type { Actor } from "../domain/principal/principal-service.js";
import { KEY_REVOKED_MESSAGE } from "./key-revocations.js";

export type Socket = { readyState: number; close(code: number, reason: string): void; once(event: "close", listener: () => void): void };

/** WebSocket.OPEN. */
export const OPEN = 1;

type Held = { socket: Socket; expiresAt?: Date; keyId?: string };

export class SocketCredentials {
  /** Each acknowledged socket's credential, by its graphql-ws context. */
  private readonly held = new WeakMap<object, Held>();

  constructor(private readonly now: () => Date) {}

  /**
   * Holds the socket to its actor's credential from now on: closes it when the credential expires.
   * False when it has expired already (verified just before the instant): the socket is closed.
   */
  opened(ctx: object, socket: Socket, actor: Actor): boolean {
    const expiresAt = expiryOf(actor);
    this.held.set(ctx, { socket, expiresAt, keyId: actor.keyId });
    if (this.ended(ctx)) return false;
    if (!expiresAt) return true;
    const stop = atExpiry(expiresAt, this.now, () => this.ended(ctx));
    socket.once("close", stop);
    return true;
  }

  /**
   * Whether the socket may send nothing more: it is closing, or its credential has expired (it
   * is closed with 4401 "token expired" then).
   */
  ended(ctx: object): boolean {
    const held = this.held.get(ctx);
    if (!held) return false;
    if (held.socket.readyState !== OPEN) return true;
    if (!hasExpired(held.expiresAt, this.now)) return false;
    held.socket.close(4401, TOKEN_EXPIRED);
    return true;
  }

  /**
   * An operation of the socket whose credential was refused when it started (each operation
   * authenticates again): the socket closes as the credential's end promises. Expired: 4401
   * "token expired"; an API key's (or the token it minted) refused: the key was revoked, 4403;
   * a sign-in token refused: 4401 with the reason.
   */
  refused(ctx: object, error: GraphQLError): void {
    const held = this.held.get(ctx);
    if (!held || this.ended(ctx)) return;
    if (held.keyId) held.socket.close(4403, KEY_REVOKED_MESSAGE);
    else held.socket.close(4401, error.message);
  }
}

/** An operation's answer on a socket that is closing: never sent, the close says why. */
export const socketClosing = () => new GraphQLError("The connection is closing.", { extensions: { code: "UNAUTHENTICATED" } });
