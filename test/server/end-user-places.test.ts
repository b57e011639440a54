// An access token's subscription places are its end user's (end-user.ts): tokens minted for one
// endUser — a page reloaded, another tab — share MAX_SUBSCRIPTIONS_PER_TOKEN places, while other
// end users with the same grants, and tokens minted without an endUser, hold their own.
import { GraphQLError } from "graphql";
import { describe, expect, it } from "vitest";
import { SubscriptionQuota } from "../../src/server/subscription-quota.js";

const grants = [{ kind: "Workspace" as const, id: "shared", operations: ["READ" as const, "SUBSCRIBE" as const] }];
const token = (tokenId: string, endUser?: string) => ({ principalId: "team", keyId: "key-1", access: { tokenId, grants, ...(endUser ? { endUser } : {}) } });

describe("an end user's subscription places", () => {
  it("are shared by every token minted for it, and by no other end user", () => {
    const quota = new SubscriptionQuota(100, 2);
    expect([quota.acquire(token("t1", "mallory")), quota.acquire(token("t2", "mallory"))].every((r) => typeof r === "function")).toBe(true);
    const third = quota.acquire(token("t3", "mallory"));
    expect(third).toBeInstanceOf(GraphQLError);
    expect((third as GraphQLError).extensions).toMatchObject({ code: "SUBSCRIPTION_LIMIT", limit: 2 });
    // Alice, with the same grants, and a token minted without an endUser: places of their own.
    expect(typeof quota.acquire(token("t4", "alice"))).toBe("function");
    expect(typeof quota.acquire(token("t5"))).toBe("function");
    expect(typeof quota.acquire(token("t5"))).toBe("function");
    expect(quota.acquire(token("t5"))).toBeInstanceOf(GraphQLError);
    expect(typeof quota.acquire(token("t6"))).toBe("function");
  });
});
