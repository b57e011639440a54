// Relay global ids: base64 of "<Type>:<database id>". Decoding never throws: a malformed id
// is simply not the id of anything.
import { ValidationError } from "./errors.js";

export function encodeGlobalId(typename: string, id: string | number | bigint): string {
  return Buffer.from(`${typename}:${id}`, "utf8").toString("base64");
}

export function decodeGlobalId(globalId: string): { typename: string; id: string } | null {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(globalId)) return null;
  const decoded = Buffer.from(globalId, "base64").toString("utf8");
  // A NUL or a byte that is not UTF-8 names nothing and must never reach the database.
  if (!isCleanDecodedText(decoded)) return null;
  const colon = decoded.indexOf(":");
  if (colon <= 0 || colon === decoded.length - 1) return null;
  return { typename: decoded.slice(0, colon), id: decoded.slice(colon + 1) };
}

/** The database id inside a global id of the given type, or null. */
export function idOfType(globalId: string, typename: string): string | null {
  const decoded = decodeGlobalId(globalId);
  return decoded?.typename === typename ? decoded.id : null;
}

/** Like idOfType, for mutation inputs: a malformed or wrongly typed id is a ValidationError. */
export function requireIdOfType(globalId: string, typename: string, field: string): string {
  const id = idOfType(globalId, typename);
  if (id === null) throw new ValidationError([{ field, message: `is not a ${typename} id` }]);
  return id;
}

/** Whether decoded id or cursor text holds no NUL and no byte that was not UTF-8 (decoded as U+FFFD). */
export function isCleanDecodedText(decoded: string): boolean {
  return !decoded.includes("\u0000") && !decoded.includes("\uFFFD");
}
