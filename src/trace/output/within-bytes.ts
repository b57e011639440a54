// A runOutput update's text is one of the response's large texts (graphql/large-text.ts): one
// larger than MAX_RESPONSE_BYTES would reach its subscriber as RESPONSE_TOO_LARGE, again each time
// it resumed from the same position. So a piece of a call's output — a snapshot of a large call,
// above all — is given as several, each within the budget, each with its own position.

/**
 * `text` cut into consecutive pieces of at most `maxBytes` UTF-8 bytes each (counted as
 * Buffer.byteLength counts them: a lone surrogate as 3), never between the two halves of a
 * surrogate pair. A text that cannot pass the budget is given as it is, without counting.
 */
export function withinBytes(text: string, maxBytes: number): string[] {
  // A UTF-16 unit is at most 3 bytes (a pair, two units, 4).
  if (text.length * 3 <= maxBytes) return [text];
  const pieces: string[] = [];
  let start = 0;
  let bytes = 0;
  for (let i = 0; i < text.length; ) {
    const unit = text.charCodeAt(i);
    let units = 1;
    let size = unit < 0x80 ? 1 : unit < 0x800 ? 2 : 3;
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        units = 2;
        size = 4;
      }
    }
    if (bytes + size > maxBytes && i > start) {
      pieces.push(text.slice(start, i));
      start = i;
      bytes = 0;
    }
    bytes += size;
    i += units;
  }
  pieces.push(text.slice(start));
  return pieces;
}
