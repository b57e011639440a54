// A quiet server gives back the memory its busy periods left (src/server/idle-collection.ts): one
// memory-reducing collection per quiet period, its start included, and none while requests arrive.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { collectWhenQuiet, type IdleCollection } from "../../src/server/idle-collection.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("collection when the server is quiet", () => {
  let server: Server;
  let idle: IdleCollection;
  afterEach(async () => {
    idle?.stop();
    await new Promise((resolve) => server?.close(resolve));
  });

  /** Answers at once, or (for /stream) keeps the response open until `release` is called. */
  let release = () => {};
  async function start(quietMs: number, collect?: () => Promise<void>, spacingMs = 0, openSockets?: () => number): Promise<string> {
    server = createServer((req, res) => {
      if (req.url !== "/stream") return void res.end("ok");
      res.write("streaming");
      release = () => res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    idle = collectWhenQuiet(server, { quietMs, spacingMs, ...(collect && { collect }), ...(openSockets && { openSockets }) });
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  }

  it("collects once after the start, never while requests keep arriving, and once when they stop", { timeout: 20_000 }, async () => {
    let collected = 0;
    const url = await start(100, async () => {
      collected += 1;
    });
    await sleep(450);
    expect(collected).toBe(1);
    // A request every 30 ms for a second: never a quiet interval.
    for (const until = Date.now() + 1_000; Date.now() < until; ) {
      await (await fetch(url)).text();
      await sleep(30);
    }
    expect(collected).toBe(1);
    await sleep(450);
    expect(collected).toBe(2);
    // Quiet and already collected: nothing more to give back.
    await sleep(450);
    expect(collected).toBe(2);
    expect(idle.collections()).toBe(2);
  });

  it("collects at most once in its spacing, however many quiet periods", { timeout: 20_000 }, async () => {
    let collected = 0;
    const url = await start(
      50,
      async () => {
        collected += 1;
      },
      60_000,
    );
    await sleep(250);
    for (let round = 0; round < 3; round += 1) {
      await (await fetch(url)).text();
      await sleep(250);
    }
    expect(collected).toBe(1);
  });

  it("never pauses a response still streaming, an open WebSocket or a process at work", { timeout: 20_000 }, async () => {
    let collected = 0;
    let sockets = 0;
    const url = await start(
      100,
      async () => {
        collected += 1;
      },
      0,
      () => sockets,
    );
    await expect.poll(() => collected, { timeout: 2_000 }).toBe(1);
    // An SSE-like response kept open: no request arrives, but a client is waiting on this one.
    const response = await fetch(`${url}stream`);
    const reader = response.body!.getReader();
    await reader.read();
    await sleep(500);
    expect(collected).toBe(1);
    release();
    while (!(await reader.read()).done);
    await expect.poll(() => collected, { timeout: 2_000 }).toBe(2);
    // A WebSocket open (a subscriber waiting for a run's next delta).
    await (await fetch(url)).text();
    sockets = 1;
    await sleep(500);
    expect(collected).toBe(2);
    sockets = 0;
    await expect.poll(() => collected, { timeout: 2_000 }).toBe(3);
    // Work in the process itself (a run's turns), with no request at all: a busy event loop.
    await (await fetch(url)).text();
    const work = setInterval(() => {
      for (const until = performance.now() + 30; performance.now() < until; );
    }, 40);
    try {
      await sleep(600);
      expect(collected).toBe(3);
    } finally {
      clearInterval(work);
    }
    await expect.poll(() => collected, { timeout: 2_000 }).toBe(4);
  });

  it("runs V8's memory-reducing collection by default, which shrinks the young generation", { timeout: 20_000 }, async () => {
    const v8 = await import("node:v8");
    const young = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === "new_space")!.space_size;
    // Garbage enough to grow the young generation to its largest.
    let kept: object[] = [];
    for (let i = 0; i < 2_000_000; i += 1) {
      kept.push({ i });
      if (kept.length > 50_000) kept = [];
    }
    const before = young();
    await start(50);
    await expect.poll(() => idle.collections(), { timeout: 5_000 }).toBe(1);
    await expect.poll(young, { timeout: 5_000 }).toBeLessThan(before);
  });
});
