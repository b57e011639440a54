// The bound on one model reply's size (MODEL_MAX_REPLY_BYTES), for the openai adapter: the text,
// reasoning and tool calls (ids, names, argument text) a reply streams count in UTF-8 bytes as
// decoded, and each tool call CALL_BYTES more for itself (about what holding one costs), so that
// calls streamed with nothing in them count too. Each streamed event carrying nothing counted
// (`"choices":[]`, a role alone) counts its bytes on the wire (decoded of any gzip), and one that
// carries some at least its wire bytes past FRAME_ALLOWANCE, so that such events, and events padded
// past an ordinary frame (a long model name, unknown fields, more choices), pass the bound as well. A reply that passes it keeps what came within it, cut at a
// character, and is read no further (openai-model.ts): a model endpoint streaming without end never
// grows a worker's memory past the bound, nor holds its run, whatever it sends.

/**
 * The bytes of one streamed event's frame that its content does not pay for: an ordinary chunk's
 * (`data: {"id":…,"object":"chat.completion.chunk","created":…,"model":…,"choices":[{"index":0,
 * "delta":{…},"finish_reason":null}]}`, with a usage report, ≈ 250–400 bytes). An event counts its
 * bytes on the wire past it when they are more than what it carries counts.
 */
export const FRAME_ALLOWANCE = 512;

/** What each tool call of a reply counts against the bound beyond its id, name and arguments. */
export const CALL_BYTES = 128;

/** What one reply has streamed, against its bound. */
export class ReplySize {
  private spent = 0;
  /** Set once the reply passed the bound: nothing more is taken. */
  full = false;

  constructor(readonly maxBytes: number) {}

  /** The bytes counted so far. */
  get used(): number {
    return this.spent;
  }

  /** Counts `bytes` that are not text (a tool call's own cost): whether they fit; when they do not, the reply is full. */
  spend(bytes: number): boolean {
    if (this.full) return false;
    if (this.spent + bytes <= this.maxBytes) {
      this.spent += bytes;
      return true;
    }
    this.full = true;
    this.spent = this.maxBytes;
    return false;
  }

  /** `text` whole while it fits; once it would pass the bound, the part that fits, and the reply is full. */
  take(text: string): string {
    if (this.full) return "";
    if (text.length === 0) return text;
    const bytes = Buffer.byteLength(text);
    if (this.spent + bytes <= this.maxBytes) {
      this.spent += bytes;
      return text;
    }
    this.full = true;
    const kept = prefixOfBytes(text, this.maxBytes - this.spent);
    this.spent = this.maxBytes;
    return kept;
  }
}

/** The longest prefix of `text` of at most `bytes` UTF-8 bytes, never ending inside a surrogate pair. */
export function prefixOfBytes(text: string, bytes: number): string {
  if (bytes <= 0) return "";
  // Each code unit is at least one byte: no prefix longer than `bytes` units fits.
  let low = 0;
  let high = Math.min(text.length, bytes);
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (Buffer.byteLength(text.slice(0, middle)) <= bytes) low = middle;
    else high = middle - 1;
  }
  const last = text.charCodeAt(low - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, low - 1) : text.slice(0, low);
}
