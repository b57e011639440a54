// Secrets at rest: MCP header and environment values (tokens, passwords) are stored sealed with
// AES-256-GCM under the operator's key (SECRETS_KEY, or on the embedded default a key file in the
// data folder). A sealed value reads `v1.<iv>.<tag>.<ciphertext>` (base64url): a database dump or
// backup holds no usable token, and a value altered in the database fails to open rather than
// being used. Values stored before sealing existed are read as they are.
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";

const PREFIX = "v1.";

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error("a secrets key is 32 bytes");
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return PREFIX + [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString("base64url")).join(".");
  }

  /** A key of its own for another purpose (`label`), derived from this one: it opens nothing sealed here. */
  derive(label: string): Buffer {
    return createHmac("sha256", this.key).update(label, "utf8").digest();
  }

  open(stored: string): string {
    if (!stored.startsWith(PREFIX)) return stored;
    const [iv, tag, ciphertext] = stored
      .slice(PREFIX.length)
      .split(".")
      .map((part) => Buffer.from(part, "base64url"));
    const decipher = createDecipheriv("aes-256-gcm", this.key, iv!);
    decipher.setAuthTag(tag!);
    return Buffer.concat([decipher.update(ciphertext!), decipher.final()]).toString("utf8");
  }
}

/** Whether a stored value is sealed (a value from before sealing existed is not). */
export const isSealed = (stored: string): boolean => stored.startsWith(PREFIX);

/** A new random key, as SECRETS_KEY holds it (base64 of 32 bytes). */
export const newSecretsKey = (): string => randomBytes(32).toString("base64");
