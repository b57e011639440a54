// The settings of who may reach the server and what a principal may start (config.ts reads them
// with the rest of the environment): the host names served, the proxies whose X-Forwarded-For is
// believed, STDIO command lines and the environment names a principal may set for them.
import path from "node:path";
import { z } from "zod";
import { MORE_ARGUMENTS, parseCommandLine, REFUSED_ENV_NAME, type StdioCommandLine } from "./domain/capabilities/stdio-policy.js";
import { ConfigError, commaList } from "./config-rules.js";
import { isLoopbackAddress, loopbackHostsOf } from "./server/allowed-hosts.js";
import { proxyEntryOf } from "./server/client-address.js";

/** The widest TRUSTED_PROXIES range of each family: a private network's (10.0.0.0/8, IPv6's unique local fc00::/7). */
const WIDEST_PROXY_PREFIX = { ipv4: 8, ipv6: 7 } as const;

const hostEntry = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/;

export const accessEnv = {
  REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:._-]{1,100}$/, "must be letters, digits and : . _ - (at most 100), such as dossier:production:")
    .optional(),
  ALLOWED_HOSTS: commaList(
    (host) => hostEntry.test(host),
    "host names (optionally host:port)",
    "dossier.example.com,127.0.0.1:4000",
    (host) => host.toLowerCase(),
  ).optional(),
  // Each entry an address or a CIDR range no wider than a network (10.0.0.0/8, fc00::/7); a refusal names every entry that is not.
  TRUSTED_PROXIES: z
    .string()
    .transform((value, ctx) => {
      const entries = value
        .split(",")
        .map((entry) => entry.trim())
        .filter((entry) => entry !== "");
      const bad = entries.filter((entry) => !proxyEntryOf(entry));
      // A range wider than any proxy network (0.0.0.0/0, ::/0) would let every client name the address it is counted as.
      const wide = entries.filter((entry) => {
        const parsed = proxyEntryOf(entry);
        return parsed !== undefined && parsed.prefix < WIDEST_PROXY_PREFIX[parsed.family];
      });
      const quoted = (list: string[]) => `${list.map((entry) => JSON.stringify(entry)).join(", ")} ${list.length === 1 ? "is" : "are"}`;
      if (bad.length > 0)
        ctx.addIssue({
          code: "custom",
          message: `${quoted(bad)} neither an IPv4 or IPv6 address nor a CIDR range: list the reverse proxies' addresses separated by commas, such as 127.0.0.1,10.0.0.0/8,fd00::/8`,
        });
      if (wide.length > 0)
        ctx.addIssue({
          code: "custom",
          message: `${quoted(wide)} wider than a proxy network (IPv4 /${WIDEST_PROXY_PREFIX.ipv4}, IPv6 /${WIDEST_PROXY_PREFIX.ipv6} at the widest): every client within would choose, by its X-Forwarded-For, the address its limits count`,
        });
      return bad.length + wide.length === 0 ? entries : z.NEVER;
    })
    .default([]),
  MCP_STDIO_COMMANDS: commaList(
    (entry) => parseCommandLine(entry).program.startsWith("/"),
    "command lines starting with an absolute program path",
    `/usr/bin/npx -y @modelcontextprotocol/server-everything,/usr/local/bin/uvx mcp-server-fetch ${MORE_ARGUMENTS}`,
  )
    .transform((entries) => entries.map(parseCommandLine))
    .default([]),
  MCP_STDIO_ENV: commaList((name) => /^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name), "environment variable names", "GITHUB_TOKEN,API_BASE")
    .refine((names) => !names.some((name) => REFUSED_ENV_NAME.test(name)), {
      message: "must not list names that change what a program runs (NODE_OPTIONS, LD_*, DYLD_*, PATH and the like are always refused)",
    })
    .default([]),
};

type AccessValues = {
  HOST: string;
  ALLOWED_HOSTS?: string[];
  MCP_STDIO_COMMANDS: StdioCommandLine[];
  MCP_STDIO_ENV: string[];
};

/**
 * The host names served: as listed, else the loopback names (and the address itself) on a loopback address. Elsewhere
 * without keys, a page under any name pointed at the server would act as the development
 * principal: that is a start error naming the setting.
 */
export function allowedHostsOf(values: AccessValues, authRequired: boolean): string[] | undefined {
  if (values.ALLOWED_HOSTS) return values.ALLOWED_HOSTS;
  if (isLoopbackAddress(values.HOST)) return loopbackHostsOf(values.HOST);
  if (authRequired) return undefined;
  throw new ConfigError([
    `ALLOWED_HOSTS: must list the host names this server answers to (such as dossier.example.com) when HOST=${values.HOST} is not a loopback address and AUTH_REQUIRED is off`,
  ]);
}

export const stdioSettings = (values: AccessValues) => ({ mcpStdioCommands: values.MCP_STDIO_COMMANDS, mcpStdioEnv: values.MCP_STDIO_ENV });

/**
 * The prefix of every Redis channel: REDIS_PREFIX, or by default one derived from the database
 * (its name on PostgreSQL, its folder on the embedded database), so deployments sharing a Redis
 * with databases of different names never hear each other, and instances of one deployment always
 * do. Deployments whose databases have the same name on different servers must set it.
 */
export function redisPrefixOf(values: { REDIS_PREFIX?: string; DATABASE_URL?: string; DATA_DIR: string }): string {
  if (values.REDIS_PREFIX) return values.REDIS_PREFIX;
  if (values.DATABASE_URL) {
    // The name only: every instance of a deployment may reach the database under another host name.
    const name = decodeURIComponent(new URL(values.DATABASE_URL).pathname.slice(1)) || "postgres";
    return `dossier:${name}:`;
  }
  return `dossier:${path.resolve(values.DATA_DIR)}:`;
}
