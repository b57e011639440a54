// What an MCP connection is made of, read from a stored server row (R14): its endpoint with the
// sealed values opened, the hash that decides whether an update reconnects, and the reason a
// failure may show the principal who configured it.
import { createHash } from "node:crypto";
import type { McpServerRecord } from "../../domain/capabilities/mcp-server-service.js";
import type { McpEndpoint } from "../ports/mcp.js";
import { isSealed, type SecretBox } from "../../domain/secret-box.js";
import { openUrl } from "../../domain/sealed-url.js";
import { type JsonValue, namedValuesOf } from "../../domain/json-columns.js";
import { FAILURE_CODE, INTERNAL_ADDRESS } from "../../domain/capabilities/outbound-policy.js";
import { STDIO_REFUSED } from "../../domain/capabilities/stdio-policy.js";

export const CLOSED_REASON = "the MCP server closed the connection";
export const UNKNOWN_REASON = "the connection failed; the server's log has the details";

/** What a connection depends on, values opened (each sealing differs); the name is not part of it (a rename keeps the connection). */
export function endpointHash(row: McpServerRecord, secrets: SecretBox | undefined): string {
  let endpoint: McpEndpoint | string;
  try {
    endpoint = endpointOf(row, secrets);
  } catch {
    endpoint = JSON.stringify([row.env, row.headers, row.url]); // fails again when connecting, saying why
  }
  return createHash("sha256")
    .update(JSON.stringify({ endpoint, command: row.command }))
    .digest("hex");
}

function pairs(value: JsonValue, secrets: SecretBox | undefined): Record<string, string> {
  return Object.fromEntries(
    (namedValuesOf(value) ?? []).map((pair) => {
      if (isSealed(pair.value) && !secrets) throw new Error("its secret values cannot be opened: this server has no SECRETS_KEY");
      return [pair.name, secrets ? secrets.open(pair.value) : pair.value];
    }),
  );
}

export function endpointOf(row: McpServerRecord, secrets: SecretBox | undefined): McpEndpoint {
  return row.transport === "STDIO"
    ? { transport: "STDIO", command: row.command ?? "", args: row.args, env: pairs(row.env, secrets) }
    : { transport: "HTTP", url: openUrl(row.url ?? "", secrets), headers: pairs(row.headers, secrets) };
}

/**
 * What a connection failure may tell the principal who configured the server: its kind and an
 * HTTP status, never the body a server answered with. A URL can point anywhere the Dossier host
 * can reach, so repeating what answered there would let a principal read internal services.
 * The full text goes to the operator's log.
 */
export function publicReason(detail: string, code?: unknown): string {
  // Dossier's own refusal, which says only what the principal wrote and which setting allows it.
  if (code === INTERNAL_ADDRESS || code === STDIO_REFUSED) return detail;
  if (typeof code === "number" && code >= 100 && code < 600) return `the server answered HTTP ${code}`;
  const status = /\b(?:HTTP|status(?: code)?)[ :]*([1-5]\d\d)\b/i.exec(detail)?.[1];
  const errno = FAILURE_CODE.exec(detail)?.[1];
  if (status) return `the server answered HTTP ${status}`;
  if (errno) return `the connection failed (${errno})`;
  if (/timed? ?out/i.test(detail)) return "the connection timed out";
  if (/closed/i.test(detail)) return CLOSED_REASON;
  if (/spawn|ENOENT|EACCES/.test(detail)) return "the command could not be started";
  return UNKNOWN_REASON;
}
