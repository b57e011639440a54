// The SDK's subscription socket outlives its last subscription for a moment (socketIdleMs): the
// next subscription a client starts soon after — the next run watched — goes out on the open
// socket at once, instead of waiting for a new connection, its upgrade and its acknowledgement,
// which a server busy with a burst of other requests answers last. It never holds a program that
// is done open for long: close() ends it at once, and an idle one closes after socketIdleMs.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
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

const PROGRAM = fileURLToPath(new URL("../support/sdk-one-subscription.ts", import.meta.url));

/** Runs the one-subscription program; how long it lived after its subscription ended. */
function exitAfterSubscription(url: string, flags: string[]): Promise<{ output: string; exitMs: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", PROGRAM, url, ...flags], { stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    let endedAt = 0;
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (!endedAt && output.includes("ended:")) endedAt = performance.now();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("error", reject);
    child.on("exit", () => {
      clearTimeout(timer);
      resolve({ output, exitMs: endedAt ? performance.now() - endedAt : Number.NaN });
    });
  });
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

  it("lets a program exit at once after close(), and one that does not close it after socketIdleMs", async () => {
    const url = t.server!.url;
    const closed = await exitAfterSubscription(url, ["--idle", "5000"]);
    expect(closed.output).toMatch(/ended: .*Run not found/);
    expect(closed.exitMs).toBeLessThan(2_000);
    const idle = await exitAfterSubscription(url, ["--idle", "5000", "--no-close"]);
    expect(idle.output).toMatch(/ended: .*Run not found/);
    expect(idle.exitMs).toBeGreaterThan(4_000);
    expect(idle.exitMs).toBeLessThan(9_000);
  }, 60_000);

  it("lets go of an idle socket whose server went away without an unhandled error", async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    try {
      const { client } = countingClient(t, { socketIdleMs: 1_500 });
      expect(await oneSubscription(client)).toMatch(/Run not found/);
      // The server goes while the socket is held open: the client's reconnections are refused, and
      // its idle time runs out after that (the client closes it on its own).
      await t.close();
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      // Closing it once more waits for the refused reconnection, and neither close fails.
      await expect(client.close()).resolves.toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(rejections).toEqual([]);
    } finally {
      process.off("unhandledRejection", onRejection);
      t = await startTestApp("pglite", { listen: true });
    }
  }, 30_000);
});
