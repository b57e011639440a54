// URLs that may carry credentials (webhook and MCP server URLs: a token in the path, `?key=…`,
// `user:pass@`) are stored sealed with the secrets box, like MCP header values, and shown to their
// owner redacted. One rule for every such URL:
//   - scheme, host and port are kept (the outbound rules and the owner need them);
//   - a user name or password reads `***@`;
//   - a path other than `/` reads `/…/***`;
//   - every query value reads `***` (the names are kept); a fragment is dropped.
// So `https://u:p@hooks.example:8443/team/hook/xyz?token=abc` is shown as
// `https://***@hooks.example:8443/…/***?token=***`. A URL with nothing to hide (no user
// information, path `/`, no query) is stored and shown as it is, key or not.
import type { PrismaClient } from "../generated/prisma/client.js";
import { ValidationError } from "./errors.js";
import { isSealed, type SecretBox } from "./secret-box.js";

export const REDACTED = "***";

/** The rule in words, for the schema's descriptions. */
export const REDACTION_RULE =
  "Shown redacted, the same rule for every stored URL: scheme, host and port as given; a user name or password as `***@`; a path other than `/` as `/…/***`; each query value as `***` (names kept); no fragment — e.g. `https://hooks.example/…/***?token=***`. The whole URL is stored encrypted with the server's SECRETS_KEY and only ever used to connect (a server without one accepts only URLs with nothing to hide, such as `https://host/`).";

/** The URL as its owner is shown it (see the rule above); never any part of a credential. */
export function redactUrl(url: string): string {
  if (!URL.canParse(url)) return REDACTED;
  const parsed = new URL(url);
  const userinfo = parsed.username || parsed.password ? `${REDACTED}@` : "";
  const path = parsed.pathname === "/" || parsed.pathname === "" ? "/" : `/…/${REDACTED}`;
  const names = [...new URLSearchParams(parsed.search).keys()];
  const query = parsed.search ? `?${names.map((name) => `${encodeURIComponent(name)}=${REDACTED}`).join("&")}` : "";
  return `${parsed.protocol}//${userinfo}${parsed.host}${path}${query}`;
}

/** Every URL in a text (an error message that repeats the URL it failed on) redacted by the rule above: for logs. */
export function redactUrlsIn(text: string): string {
  // Punctuation that ends a sentence is not part of the URL.
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]*[^\s"'<>`.,;:!?)\]]/gi, (url) => redactUrl(url));
}

/**
 * The refusal of a URL with a user name or password: it could never be used (Dossier's outbound
 * requests send no Basic auth, and undici refuses such a URL) and its password would be stored and
 * logged with it. `instead` says how the owner authenticates.
 */
export const userinfoRefusal = (instead: string): string => `must not carry a user name or password (user:pass@): ${instead}`;

/** Whether a URL carries a user name or password; false for one that does not parse. */
export const hasUserinfo = (url: string): boolean => URL.canParse(url) && (new URL(url).username !== "" || new URL(url).password !== "");

/** Whether the redacted form hides something of the URL. */
export const hidesSomething = (url: string): boolean => URL.canParse(url) && redactUrl(url) !== new URL(url).href;

/**
 * The stored form of a URL: sealed when a key is configured. Without one, a URL with something to
 * hide cannot be stored (as header values cannot): a ValidationError on `field` says so.
 */
export function sealUrl(url: string, secrets: SecretBox | undefined, field: string): string {
  if (secrets) return secrets.seal(url);
  if (!hidesSomething(url)) return url;
  throw new ValidationError([
    {
      field,
      message:
        "cannot be stored with a path, query or user name: this server has no SECRETS_KEY to encrypt it with (ask its operator to set one, or use a URL of the form https://host/)",
    },
  ]);
}

/** The URL a stored value holds: opened when sealed, as it is when stored before sealing existed. */
export function openUrl(stored: string, secrets: SecretBox | undefined): string {
  if (!isSealed(stored)) return stored;
  if (!secrets) throw new Error("a sealed URL cannot be opened: this server has no SECRETS_KEY");
  return secrets.open(stored);
}

/** What the owner is shown of a stored URL; `***` alone when it cannot be opened (SECRETS_KEY missing or changed). */
export function shownUrl(stored: string, secrets: SecretBox | undefined): string {
  try {
    return redactUrl(openUrl(stored, secrets));
  } catch {
    return REDACTED;
  }
}

/**
 * Seals the webhook and MCP server URLs stored in clear before sealing existed (run at start when
 * a key is configured). Each row is changed only if it still holds the clear value it was read
 * with, so instances starting together seal each row once; until then a clear URL is read as it is.
 */
export async function sealStoredUrls(prisma: PrismaClient, secrets: SecretBox): Promise<number> {
  let sealed = 0;
  const webhooks = await prisma.webhook.findMany({ where: { NOT: { url: { startsWith: "v1." } } }, select: { id: true, url: true } });
  for (const row of webhooks) sealed += (await prisma.webhook.updateMany({ where: { id: row.id, url: row.url }, data: { url: secrets.seal(row.url) } })).count;
  const servers = await prisma.mcpServer.findMany({ where: { url: { not: null }, NOT: { url: { startsWith: "v1." } } }, select: { id: true, url: true } });
  for (const row of servers) {
    if (row.url) sealed += (await prisma.mcpServer.updateMany({ where: { id: row.id, url: row.url }, data: { url: secrets.seal(row.url) } })).count;
  }
  return sealed;
}
