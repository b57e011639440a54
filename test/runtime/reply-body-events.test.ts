// A model reply's body as the SDK reads it (model-body.ts): whole events, one a read, whatever
// pieces the network delivered them in, each line end the SDK knows; what was handed over counted
// to the byte, so that each chunk the adapter reads is charged its own bytes against the bound.
import { Readable } from "node:stream";
import { expect, it } from "vitest";
import { type BodyBound, replyBody } from "../../src/runtime/adapters/model-body.js";

it("hands the SDK one whole event a read, counting the bytes handed over", async () => {
  const pieces = ["data: a\n\ndata: b\r\n\r\ndat", "a: c\n", "\ndata: d\r\rdata: e\n\n: x\n\n", "tail"];
  const bound: BodyBound = { maxBytes: 1_000_000, unread: 0, delivered: 0, passed: false };
  const reader = replyBody(Readable.from(pieces.map((piece) => Buffer.from(piece))), bound).getReader();
  const read: { event: string; delivered: number }[] = [];
  for (let next = await reader.read(); !next.done; next = await reader.read())
    read.push({ event: Buffer.from(next.value).toString(), delivered: bound.delivered });
  expect(read.map(({ event }) => event)).toEqual(["data: a\n\n", "data: b\r\n\r\n", "data: c\n\n", "data: d\r\r", "data: e\n\n", ": x\n\n", "tail"]);
  // Nothing is handed over ahead of the read that asks for it.
  expect(read.map(({ delivered }) => delivered)).toEqual([9, 20, 29, 38, 47, 52, 56]);
});
