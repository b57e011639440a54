// A model reply's body as the OpenAI SDK reads it (model-http.ts), decoded of its Content-Encoding.
//
// - Whole events: what arrives is passed on up to the end of its last complete server-sent event
//   (a blank line), the rest held until its own end arrives; the SDK is handed one event a read, as
//   it asks, so that what it was handed when the adapter reads a chunk is that chunk's bytes (the
//   bound counts them, openai-stream.ts). The SDK joins what it is given to what
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
  /**
   * Bytes (decoded) handed to the SDK so far, whole events one at a time as it asks for them: when
   * the adapter reads a chunk, what this grew by since the chunk before is that chunk's event and
   * any the SDK passed over (comments, [DONE]), whatever the network delivered ahead of them.
   */
  delivered: number;
  /** Set when the body sent more than `maxBytes` unread, and was ended for it. */
  passed: boolean;
};

/** How the SDK finds an event's end: a blank line, in each of its line ends. */
const EVENT_ENDS = [Buffer.from("\n\n"), Buffer.from("\r\r"), Buffer.from("\r\n\r\n")];
/** Whole events held for the SDK before the body is paused. */
const HELD_BYTES = 64 * 1024;

/** `source` as the web stream the SDK reads: whole events, one a read, within `bound` when one is given. */
export function replyBody(source: Readable, bound: BodyBound | undefined): ReadableStream<Uint8Array> {
  /** The start of an event whose end has not arrived. */
  let held: Buffer[] = [];
  /** The last bytes held (at most 3, however many pieces they came in): where an event's end may begin. */
  let tail: Buffer = Buffer.alloc(0);
  /** Whole events not yet handed to the SDK, and their bytes. */
  const events: Buffer[] = [];
  let eventBytes = 0;
  let ended: { error?: Error } | undefined;
  let cancelled = false;
  let wake: (() => void) | undefined;
  const arrived = () => {
    wake?.();
    wake = undefined;
  };
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
    for (const event of splitEvents(ready)) events.push(event);
    eventBytes += ready.length;
    if (eventBytes >= HELD_BYTES) source.pause();
    arrived();
  });
  finished(source, (error) => {
    if (!error && held.length > 0) {
      const rest = Buffer.concat(held);
      events.push(rest);
      eventBytes += rest.length;
    }
    held = [];
    tail = Buffer.alloc(0);
    ended = error ? { error } : {};
    arrived();
  });
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        while (events.length === 0 && !ended) await new Promise<void>((resolve) => (wake = resolve));
        if (cancelled) return;
        const event = events.shift();
        if (event) {
          eventBytes -= event.length;
          if (bound) bound.delivered += event.length;
          if (eventBytes < HELD_BYTES) source.resume();
          return controller.enqueue(event);
        }
        if (ended?.error) controller.error(ended.error);
        else controller.close();
      },
      cancel(reason) {
        cancelled = true;
        source.destroy(reason instanceof Error ? reason : undefined);
      },
    },
    // Nothing is read ahead of the SDK: each read is handed one event, as it asks.
    { highWaterMark: 0 },
  );
}

/** The whole events of `ready` (which ends where an event ends), each with its end; in one pass over it. */
function splitEvents(ready: Buffer): Buffer[] {
  const events: Buffer[] = [];
  // Where each kind of end is next found (-1: nowhere further), searched again only once passed.
  const next = EVENT_ENDS.map((mark) => ready.indexOf(mark));
  let from = 0;
  while (from < ready.length) {
    let to = ready.length;
    EVENT_ENDS.forEach((mark, kind) => {
      if (next[kind]! >= 0 && next[kind]! < from) next[kind] = ready.indexOf(mark, from);
      if (next[kind]! >= 0) to = Math.min(to, next[kind]! + mark.length);
    });
    // No end found from here: the end began in the piece before (its first bytes were held), and the rest is one event.
    events.push(ready.subarray(from, to));
    from = to;
  }
  return events;
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
