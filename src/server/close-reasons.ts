// What a graphql-ws socket refused at connection_init is told in its close reason: a GraphQL
// error's own message — written for the client, as an HTTP request would get it — and nothing of
// any other failure (a database's or a library's message names internals). A close reason holds at
// most 123 bytes (RFC 6455): a longer message is cut there, on a character boundary.
import { GraphQLError } from "graphql";

/** The close code and reason of an unexpected failure: clients do not retry it, as over HTTP's 500. */
export const INTERNAL_CLOSE = { code: 4500, reason: "Internal server error" } as const;

const MAX_REASON_BYTES = 123;

/** `text` cut to a WebSocket close reason's 123 bytes of UTF-8, never in the middle of a character. */
export function closeReason(text: string): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= MAX_REASON_BYTES) return text;
  let end = MAX_REASON_BYTES;
  // A continuation byte (10xxxxxx) at the cut means its character began before it: cut before that.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end -= 1;
  return bytes.subarray(0, end).toString("utf8");
}

/** How a socket whose credentials were refused is closed: 4401 and the refusal's own message, or INTERNAL_CLOSE. */
export function refusalClose(error: unknown): { code: number; reason: string } {
  return error instanceof GraphQLError ? { code: 4401, reason: closeReason(error.message) } : INTERNAL_CLOSE;
}
