// The SDK's subscription socket outlives its last subscription for a moment (socketIdleMs): the
// next subscription a client starts soon after — the next run watched — goes out on the open
// socket at once, instead of waiting for a new connection, its upgrade and its acknowledgement,
// which a server busy with a burst of other requests answers last.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { type ClientOptions, createClient } from "../../sdk/client.js";
import { RunOutputDocument } from "../../sdk/generated/graphql.js";
import { encodeGlobalId } from "../../src/domain/global-id.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** A client whose sockets are counted as they open. */
function countingClient(t: TestApp, options: Partial<ClientOptions> = {}) {
  const opened = { count: 0 };
  class CountedWebSocket extends WebSocket {
    constructor(...args: ConstructorParameters<typeof WebSocket>) {
      super(...args);
      opened.count += 1;
    }
  }
  return { client: createClient({ url: t.server!.url, webSocketImpl: CountedWebSocket, ...options }), opened };
}

/** One subscription to its end: runOutput of a run that does not exist ends with "Run not found". */
async function oneSubscription(client: ReturnType<typeof createClient>): Promise<string> {
  try {
    for await (const _ of client.subscribe(RunOutputDocument, { runId: encodeGlobalId("Run", crypto.randomUUID()) })) {
      // No update comes for a run that is not there.
    }
    return "ended";
  } catch (error) {
    return (error as Error).message;
  }
}

describe("the SDK's subscription socket", () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await startTestApp("pglite", { listen: true });
  });
  afterEach(() => t.close());

  it("carries the next subscription started soon after the last one ended, without a new connection", async () => {
    const { client, opened } = countingClient(t);
    try {
      for (let i = 0; i < 3; i += 1) {
        expect(await oneSubscription(client)).toMatch(/Run not found/);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(opened.count).toBe(1);
    } finally {
      await client.close();
    }
  });

  it("closes once idle for socketIdleMs, and opens a new one for a later subscription", async () => {
    const { client, opened } = countingClient(t, { socketIdleMs: 100 });
    try {
      expect(await oneSubscription(client)).toMatch(/Run not found/);
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await oneSubscription(client)).toMatch(/Run not found/);
      expect(opened.count).toBe(2);
    } finally {
      await client.close();
    }
  });
});
