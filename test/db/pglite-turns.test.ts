// The embedded database's statements take turns with the rest of the process (pglite-turns.ts):
// statements sent one after the other each wait for a turn of the event loop, so timers and
// sockets run between them; a statement sent once the loop has turned since the last one (a
// turn's reply, read from a socket) starts at once instead of waiting for one more turn.
import { setTimeout as sleep } from "node:timers/promises";
import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { takingTurns } from "../../src/db/pglite-turns.js";

describe("takingTurns", () => {
  let pglite: PGlite;
  beforeAll(async () => {
    pglite = await PGlite.create();
  }, 60_000);
  afterAll(() => pglite.close());

  it("starts a statement at once after the loop turned, and lets the loop turn between statements sent back to back", async () => {
    const db = takingTurns(pglite);
    await db.query("SELECT 1");
    await sleep(5);
    const order: string[] = [];
    const statement = async (name: string) => {
      await db.query("SELECT 1");
      order.push(name);
    };
    setImmediate(() => order.push("immediate 1"));
    await statement("first");
    setImmediate(() => order.push("immediate 2"));
    await statement("second");
    await statement("third");
    // The first went before the turn it had no need of; the second and third each waited for one.
    expect(order).toEqual(["first", "immediate 1", "immediate 2", "second", "third"]);
  });

  it("keeps the order statements were asked in while some wait for the loop", async () => {
    const db = takingTurns(pglite);
    await sleep(5);
    const order: number[] = [];
    await Promise.all([0, 1, 2, 3, 4].map((n) => db.query("SELECT $1::int AS n", [n]).then(() => order.push(n))));
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });
});
