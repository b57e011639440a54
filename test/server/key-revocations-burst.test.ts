// A burst of key revocations larger than the event bus keeps for one subscriber (a principal's
// many keys revoked at once) must not leave the server deaf to the next revocation: the
// subscriptions opened with a key revoked afterwards still end at once, not at the next sweep.
import { expect, it } from "vitest";
import { createEventBus, SUBSCRIBER_LIMIT } from "../../src/events/topics.js";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
import { silentLogger } from "../../src/logger.js";
import { KeyRevocations } from "../../src/server/key-revocations.js";
import { countUncaughtWhile } from "../support/uncaught.js";
import { waitUntil } from "../support/wait.js";

it("hears a revocation that comes after a burst of more revocations than the bus keeps for it", async () => {
  const events = createEventBus();
  // No sweep within the test: only the bus can end the subscription.
  const revocations = new KeyRevocations({ prisma: {} as PrismaClient, events, logger: silentLogger, sweepMs: 3_600_000 });
  try {
    let ended = 0;
    const uncaught = await countUncaughtWhile(async () => {
      // In one turn: the listener takes none of them before the last.
      for (let i = 0; i < SUBSCRIBER_LIMIT + 100; i += 1) events.publish("apikey:revoked", { keyId: `other-${i}`, at: "now" });
      await new Promise((resolve) => setTimeout(resolve, 100));
      revocations.watch("key-1", () => (ended += 1));
      events.publish("apikey:revoked", { keyId: "key-1", at: "now" });
      await waitUntil(() => (ended === 1 ? true : undefined), 2_000);
    });
    expect(uncaught).toEqual([]);
    expect(ended).toBe(1);
  } finally {
    await revocations.close();
  }
});
