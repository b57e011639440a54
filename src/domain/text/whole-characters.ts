// Text cut to a length without splitting a character: a cut that ended in half a surrogate pair
// (an emoji, a CJK extension character) would be stored and sent as U+FFFD, a character its
// writer never wrote.

/** At most `max` UTF-16 units of `text`, never ending inside a surrogate pair. */
export function head(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/** A new conversation's title: the start of its first question, at most 80 UTF-16 units. */
export function conversationTitle(question: string): string {
  return head(question, 80);
}
