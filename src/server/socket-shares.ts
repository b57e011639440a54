// A WebSocket server's operations held to the fair shares (issue 36): each operation takes a
// rate-limit token when it starts, from its socket's credential's bucket (or its address's) and its
// principal's, and each subscription holds a place of its key's and principal's quota until it
// completes.
import { type DocumentNode, GraphQLError, getOperationAST } from "graphql";
import { type Caller, type RateLimits, rateLimitedError, takeFor } from "./rate-limit.js";
import type { Holder, SubscriptionQuota } from "./subscription-quota.js";

export class SocketShares {
  /** Each socket's credential, as its connection authenticated. */
  private readonly callers = new WeakMap<object, Caller>();
  /** Each socket's subscriptions holding a place, by operation id. */
  private readonly places = new WeakMap<object, Map<string, () => void>>();

  constructor(
    private readonly rateLimits: RateLimits | undefined,
    private readonly quota: SubscriptionQuota,
  ) {}

  connected(socket: object, caller: Caller): void {
    this.callers.set(socket, caller);
  }

  /** A token for an operation starting on the socket; the error when its bucket is empty. */
  async start(socket: object, address: string | undefined): Promise<GraphQLError | undefined> {
    if (!this.rateLimits) return undefined;
    const decision = await takeFor(this.rateLimits, this.callers.get(socket), address);
    return decision.allowed ? undefined : rateLimitedError(decision.retryAfterSeconds);
  }

  /** A place for the operation when it is a subscription; the error when its holder is at the cap. */
  hold(socket: object, id: string, operation: { document: DocumentNode; operationName?: string | null }, holder: Holder): GraphQLError | undefined {
    if (getOperationAST(operation.document, operation.operationName)?.operation !== "subscription") return undefined;
    const release = this.quota.acquire(holder);
    if (release instanceof GraphQLError) return release;
    if (!this.places.has(socket)) this.places.set(socket, new Map());
    this.places.get(socket)!.set(id, release);
    return undefined;
  }

  /** Gives back the place of one operation, or of all the socket's when it closed. */
  release(socket: object, id?: string): void {
    const held = this.places.get(socket);
    for (const [operation, release] of held ?? []) {
      if (id !== undefined && operation !== id) continue;
      release();
      held!.delete(operation);
    }
  }
}
