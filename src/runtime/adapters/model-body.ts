// A model reply's body as the OpenAI SDK reads it (model-http.ts), decoded of its Content-Encoding.
//
// - Whole events: what arrives is passed on up to the end of its last complete server-sent event
//   (a blank line), the rest held until its own end arrives. The SDK joins what it is given to what
//   it holds on each piece, so an event sent in thousands of pieces cost it time in the square of
//   its size (16 MiB: about 40 s of CPU); joined here once, it costs time in proportion.
// - Bounded: what the SDK holds before it hands the adapter a chunk (an event's lines, comments)
//   grows only as the body sends it. With a BodyBound, a body that sends more than `maxBytes`
//   (decoded: a small gzip body may inflate to gigabytes) without the adapter reading a chunk of the
//   reply is ended then, with an error coded EREPLYBOUND, and `passed` set: the adapter keeps what it
//   read (openai-model.ts), and the connection is closed rather than drained.
import type { Readable } from "node:stream";
import { finished } from "node:stream";

/** What one reply's body may send beyond what was read of it; the adapter gives it with its request. */
export type BodyBound = {
  /** Bytes (decoded) the body may send beyond the reply's last chunk read (MODEL_MAX_REPLY_BYTES). */
  maxBytes: number;
  /** Bytes sent since the adapter last read a chunk of the reply: it sets this to 0 as it reads one. */
  unread: number;
  /** Set when the body sent more than `maxBytes` unread, and was ended for it. */
  passed: boolean;
};

/** How the SDK finds an event's end: a blank line, in each of its line ends. */
const EVENT_ENDS = [Buffer.from("\n\n"), Buffer.from("\r\r"), Buffer.from("\r\n\r\n")];

/** `source` as the web stream the SDK reads: whole events, within `bound` when one is given. */
export function replyBody(source: Readable, bound: BodyBound | undefined): ReadableStream<Uint8Array> {
  let held: Buffer[] = [];
  /** The last bytes held (at most 3, however many pieces they came in): where an event's end may begin. */
  let tail: Buffer = Buffer.alloc(0);
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        source.on("data", (piece: Buffer) => {
          if (bound && (bound.unread += piece.length) > bound.maxBytes) {
            bound.passed = true;
            const error = new Error(`the reply sent more than ${bound.maxBytes} bytes (MODEL_MAX_REPLY_BYTES) without a complete chunk`);
            source.destroy(Object.assign(error, { code: "EREPLYBOUND" }));
            return;
          }
          const end = eventEnd(tail, piece);
          if (end < 0) {
            held.push(piece);
            tail = lastBytes(tail, piece);
            return;
          }
          const ready = held.length === 0 ? piece.subarray(0, end) : Buffer.concat([...held, piece.subarray(0, end)]);
          held = end < piece.length ? [piece.subarray(end)] : [];
          tail = lastBytes(Buffer.alloc(0), piece.subarray(end));
          controller.enqueue(ready);
          if ((controller.desiredSize ?? 1) <= 0) source.pause();
        });
        finished(source, (error) => {
          if (error) return controller.error(error);
          if (held.length > 0) controller.enqueue(Buffer.concat(held));
          held = [];
          tail = Buffer.alloc(0);
          controller.close();
        });
      },
      pull() {
        source.resume();
      },
      cancel(reason) {
        source.destroy(reason instanceof Error ? reason : undefined);
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }),
  );
}

/** The last 3 bytes of `before` followed by `piece`. */
function lastBytes(before: Buffer, piece: Buffer): Buffer {
  if (piece.length >= 3) return Buffer.from(piece.subarray(piece.length - 3));
  const joined = Buffer.concat([before, piece]);
  return joined.subarray(Math.max(0, joined.length - 3));
}

/** Where in `piece` the last event that ends in it ends (counting `tail`, the last bytes held before it), or -1. */
function eventEnd(tail: Buffer, piece: Buffer): number {
  let end = -1;
  for (const mark of EVENT_ENDS) {
    const at = piece.lastIndexOf(mark);
    if (at >= 0) end = Math.max(end, at + mark.length);
  }
  if (end >= 0 || tail.length === 0) return end;
  // An end that begins in what is held: its last bytes and this piece's first ones.
  const seam = Buffer.concat([tail, piece.subarray(0, 3)]);
  for (const mark of EVENT_ENDS) {
    const at = seam.lastIndexOf(mark);
    if (at >= 0 && at + mark.length > tail.length) end = Math.max(end, at + mark.length - tail.length);
  }
  return end;
}
