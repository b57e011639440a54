// Verifying Dossier's webhooks in a receiver (Standard Webhooks: https://www.standardwebhooks.com).
// Web Crypto only (globalThis.crypto, in Node.js 20+, Deno, Bun, browsers and edge runtimes): the
// SDK stays free of Node-only imports.
import type { WebhookEventType } from "./generated/graphql.js";

/** An event as Dossier sends it: its type, when it happened, global ids and a one-line summary (never bodies). */
export type WebhookEvent = {
  type: WebhookEventType;
  /** ISO 8601. */
  timestamp: string;
  data: { summary: string } & Record<string, string | number | null>;
};

/** Why a delivery did not verify; the receiver should answer it with a 4xx and act on nothing. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

export type VerifyWebhookOptions = {
  /** How far webhook-timestamp may be from now, either way (replay protection): 300 s by default. */
  toleranceSeconds?: number;
  now?: Date;
};

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

/**
 * Verifies a delivery and returns its event; throws WebhookVerificationError when it does not
 * verify. `payload` is the raw request body exactly as received (not re-serialised JSON),
 * `headers` the request's headers (a Headers object or Node's `request.headers`), `secret` the
 * `whsec_…` secret from createWebhook or rotateWebhookSecret — or several, while you switch
 * secrets. A delivery verifies when one of its `v1,` signatures matches one of the secrets, and its
 * timestamp is within the tolerance. The same event may arrive more than once (at-least-once):
 * use `webhook-id` to act on it once.
 */
export async function verifyWebhook(
  payload: string | Uint8Array,
  headers: HeaderSource,
  secret: string | readonly string[],
  { toleranceSeconds = 300, now = new Date() }: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
  const sentAt = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || Math.abs(now.getTime() / 1000 - sentAt) > toleranceSeconds) {
    throw new WebhookVerificationError("webhook-timestamp is missing, malformed or outside the tolerance");
  }
  const body = typeof payload === "string" ? payload : new TextDecoder().decode(payload);
  const offered = signatures
    .split(" ")
    .filter((entry) => entry.startsWith("v1,"))
    .map((entry) => entry.slice(3));
  for (const candidate of typeof secret === "string" ? [secret] : secret) {
    const expected = await sign(candidate, `${id}.${timestamp}.${body}`);
    if (offered.some((signature) => equal(signature, expected))) return parse(body);
  }
  throw new WebhookVerificationError("no signature matches the secret");
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  const value = (headers as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(value) ? value[0] : value;
}

async function sign(secret: string, content: string): Promise<string> {
  const raw = atob(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret);
  const keyBytes = Uint8Array.from(raw, (char) => char.charCodeAt(0));
  const key = await globalThis.crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", key, new TextEncoder().encode(content)));
  return btoa(String.fromCharCode(...mac));
}

/** Compares in time independent of where the strings differ. */
function equal(a: string, b: string): boolean {
  let difference = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i += 1) difference |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  return difference === 0;
}

function parse(body: string): WebhookEvent {
  try {
    return JSON.parse(body) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError("the body is not JSON");
  }
}
