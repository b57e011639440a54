// MCP server configurations per principal (R14): validated, upserted by name, deleted by name.
// Every committed change is announced on `mcp:changed`, so the MCP registry of every instance
// reconnects that server (and only that one) without a restart.
import { z } from "zod";
import type { EventPublisher } from "../../events/topics.js";
import type { McpServer, PrismaClient } from "../../generated/prisma/client.js";
import type { JsonValue } from "../json-columns.js";
import { NotFoundError, ValidationError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { parseInput } from "../validation.js";
import { literalAddressRefusal } from "./outbound-policy.js";
import type { SecretBox } from "../secret-box.js";
import { hasUserinfo, sealUrl, shownUrl, userinfoRefusal } from "../sealed-url.js";
import { type StdioCommandLine, stdioRefusals } from "./stdio-policy.js";
import { lockPrincipalRow } from "../principal/principal-lock.js";

export const MCP_SERVERS_PER_PRINCIPAL_MAX = 20;

/**
 * A stored server configuration as those who connect to it read it. Header and environment
 * values are stored as [{ name, value }] (namedValuesOf), secret values sealed.
 */
export type McpServerRecord = {
  id: string;
  name: string;
  transport: "STDIO" | "HTTP";
  command: string | null;
  args: string[];
  env: JsonValue;
  url: string | null;
  headers: JsonValue;
  enabled: boolean;
  /** Every call of the server's tools waits for the owner's approval. */
  requireApproval: boolean;
};

/** What a run's calls of a server's tools are gated by: whether it is enabled and requires approval. */
export type McpServerApproval = Pick<McpServerRecord, "id" | "enabled" | "requireApproval">;

/** No `_`: tool names are `mcp__<server>__<tool>`, and the server part must be unambiguous. */
export const mcpServerName = z.string().regex(/^[a-z][a-z0-9-]{0,31}$/, "must be lower-case letters, digits and - (at most 32), starting with a letter");

const pairValue = z.string().max(8_192, "must be at most 8192 characters");
const pair = (nameRule: RegExp, nameMessage: string, value = pairValue) => z.object({ name: z.string().regex(nameRule, nameMessage), value });
// A CR or LF in a header value would end the header early: what follows would be a header of the caller's choosing.
const headerValue = pairValue.refine((value) => !/[\r\n]/.test(value), "must not contain a line break (CR or LF)");

const upsertInput = z
  .object({
    name: mcpServerName,
    transport: z.enum(["STDIO", "HTTP"]),
    command: z.string().trim().min(1, "must not be empty").max(1_000).nullish(),
    args: z.array(z.string().max(4_000)).max(100, "at most 100 arguments").nullish(),
    env: z
      .array(pair(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "must be an environment variable name"))
      .max(50)
      .nullish(),
    url: z.string().max(2_000).nullish(),
    headers: z
      .array(pair(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, "must be an HTTP header name", headerValue))
      .max(50)
      .nullish(),
    enabled: z.boolean().nullish(),
    requireApproval: z.boolean().nullish(),
  })
  .superRefine((input, ctx) => {
    if (input.transport === "STDIO") {
      if (!input.command) ctx.addIssue({ code: "custom", path: ["command"], message: "is required for STDIO servers" });
      if (input.url) ctx.addIssue({ code: "custom", path: ["url"], message: "applies to HTTP servers only" });
      if (input.headers?.length) ctx.addIssue({ code: "custom", path: ["headers"], message: "apply to HTTP servers only" });
    } else {
      if (!input.url || !URL.canParse(input.url) || !/^https?:$/.test(new URL(input.url).protocol)) {
        ctx.addIssue({ code: "custom", path: ["url"], message: "must be an http:// or https:// URL for HTTP servers" });
      } else if (hasUserinfo(input.url)) {
        // It would never connect, and its password would reach the log with each failed attempt.
        ctx.addIssue({ code: "custom", path: ["url"], message: userinfoRefusal("send credentials as a header (e.g. Authorization) instead") });
      }
      if (input.command) ctx.addIssue({ code: "custom", path: ["command"], message: "applies to STDIO servers only" });
      if (input.args?.length) ctx.addIssue({ code: "custom", path: ["args"], message: "apply to STDIO servers only" });
      if (input.env?.length) ctx.addIssue({ code: "custom", path: ["env"], message: "applies to STDIO servers only" });
    }
  });

const deleteInput = z.object({ name: mcpServerName });

export type UpsertMcpServerInput = z.input<typeof upsertInput>;
export type DeleteMcpServerInput = z.input<typeof deleteInput>;

export class McpServerService {
  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      events: EventPublisher;
      /** The command lines STDIO servers may start (MCP_STDIO_COMMANDS) and the environment names they may set (MCP_STDIO_ENV). */
      stdioCommands: readonly StdioCommandLine[];
      stdioEnv: readonly string[];
      /** Hosts HTTP servers may reach inside the network (MCP_HTTP_ALLOWED_HOSTS); names are checked again when resolved. */
      httpAllowedHosts: readonly string[];
      /** Seals URLs, header and environment values; without it (PostgreSQL without SECRETS_KEY) none with a secret may be stored. */
      secrets?: SecretBox;
    },
  ) {}

  list(actor: Actor): Promise<McpServer[]> {
    return this.deps.prisma.mcpServer.findMany({ where: { ownerId: actor.principalId }, orderBy: { name: "asc" } });
  }

  /** The servers of each of `principalIds`, by name: one read for the principals of every run that starts together. */
  listOf(principalIds: readonly string[]): Promise<McpServer[]> {
    if (principalIds.length === 0) return Promise.resolve([]);
    return this.deps.prisma.mcpServer.findMany({ where: { ownerId: { in: [...principalIds] } }, orderBy: { name: "asc" } });
  }

  /**
   * Whether each of the servers `serverIds` is enabled and requires approval, as stored now: one
   * statement, by primary key. A server not among the rows was deleted (or replaced under its name).
   */
  approvalsOf(serverIds: readonly string[]): Promise<McpServerApproval[]> {
    if (serverIds.length === 0) return Promise.resolve([]);
    return this.deps.prisma.mcpServer.findMany({ where: { id: { in: [...serverIds] } }, select: { id: true, enabled: true, requireApproval: true } });
  }

  /**
   * Creates or replaces the whole configuration of the named server (omitted lists are empty), but
   * for requireApproval: left out, the stored value stays (off for a new server).
   */
  async upsert(actor: Actor, input: UpsertMcpServerInput): Promise<McpServer> {
    const parsed = parseInput(upsertInput, input);
    const refused =
      parsed.transport === "STDIO"
        ? stdioRefusals(
            { command: parsed.command ?? "", args: parsed.args ?? [], envNames: (parsed.env ?? []).map((pair) => pair.name) },
            this.deps.stdioCommands,
            this.deps.stdioEnv,
          )
        : [];
    if (refused.length > 0) throw new ValidationError(refused);
    const unreachable = parsed.url ? literalAddressRefusal(new URL(parsed.url), this.deps.httpAllowedHosts, "MCP_HTTP_ALLOWED_HOSTS") : null;
    if (unreachable) throw new ValidationError([{ field: "url", message: unreachable }]);
    const data = {
      transport: parsed.transport,
      command: parsed.command ?? null,
      args: parsed.args ?? [],
      env: this.sealed("env", parsed.env ?? []),
      url: parsed.url ? sealUrl(parsed.url, this.deps.secrets, "url") : null,
      headers: this.sealed("headers", parsed.headers ?? []),
      enabled: parsed.enabled ?? true,
    };
    // Left out, requireApproval keeps what is stored (off for a new server): replacing a token must not lift the hold.
    const requireApproval = parsed.requireApproval ?? undefined;
    const where = { ownerId_name: { ownerId: actor.principalId, name: parsed.name } };
    const server = await this.deps.prisma.$transaction(async (tx) => {
      await lockPrincipalRow(tx, actor.principalId);
      const existing = await tx.mcpServer.findUnique({ where, select: { id: true } });
      if (!existing && (await tx.mcpServer.count({ where: { ownerId: actor.principalId } })) >= MCP_SERVERS_PER_PRINCIPAL_MAX) {
        throw new ValidationError([{ field: "name", message: `at most ${MCP_SERVERS_PER_PRINCIPAL_MAX} MCP servers per principal` }]);
      }
      return tx.mcpServer.upsert({
        where,
        create: { ownerId: actor.principalId, name: parsed.name, ...data, requireApproval: requireApproval ?? false },
        update: { ...data, ...(requireApproval !== undefined && { requireApproval }) },
      });
    });
    this.announce(actor);
    return server;
  }

  /** Removes the server; its connection closes once the calls in flight on it have finished. */
  async delete(actor: Actor, input: DeleteMcpServerInput): Promise<McpServer> {
    const { name } = parseInput(deleteInput, input);
    const existing = await this.deps.prisma.mcpServer.findUnique({ where: { ownerId_name: { ownerId: actor.principalId, name } } });
    if (!existing) throw new NotFoundError("McpServer", name);
    await this.deps.prisma.mcpServer.deleteMany({ where: { id: existing.id } });
    this.announce(actor);
    return existing;
  }

  /** A stored URL as its owner is shown it: scheme, host and port, the rest redacted (domain/sealed-url.ts). */
  shownUrl(stored: string): string {
    return shownUrl(stored, this.deps.secrets);
  }

  /** The pairs with their values sealed; a typed error when there is no key to seal them with. */
  private sealed(field: "env" | "headers", pairs: { name: string; value: string }[]): { name: string; value: string }[] {
    if (pairs.length === 0) return pairs;
    const { secrets } = this.deps;
    if (!secrets) {
      throw new ValidationError([
        { field, message: "cannot be stored: this server has no SECRETS_KEY to encrypt secret values with (ask its operator to set one)" },
      ]);
    }
    return pairs.map((pair) => ({ name: pair.name, value: secrets.seal(pair.value) }));
  }

  private announce(actor: Actor): void {
    this.deps.events.publish("mcp:changed", { principalId: actor.principalId, at: new Date().toISOString() });
  }
}
