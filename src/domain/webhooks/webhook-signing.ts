// Standard Webhooks signing (https://www.standardwebhooks.com): a secret is `whsec_` and the
// base64 of 32 random bytes; a message is signed with HMAC-SHA256 of the secret's bytes over
// `${webhook-id}.${webhook-timestamp}.${body}`, and `webhook-signature` lists one `v1,<base64>`
// per secret in force, separated by spaces — after a rotation, the new secret's and the old one's.
import { createHmac, randomBytes } from "node:crypto";

const PREFIX = "whsec_";

/** A new signing secret in the Standard Webhooks form. */
export const newSigningSecret = (): string => PREFIX + randomBytes(32).toString("base64");

/** `v1,<signature>` for one secret. */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`, "utf8").digest("base64")}`;
}

/** The three Standard Webhooks headers of one attempt, signed with every secret given (newest first). */
export function webhookHeaders(secrets: readonly string[], id: string, body: string, now = new Date()): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": secrets.map((secret) => signature(secret, id, timestamp, body)).join(" "),
  };
}
