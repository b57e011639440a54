// Principals and their API keys (A6). A key is a random secret shown once; only its SHA-256
// is stored, so the database never holds a usable key.
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import type { ApiKey, Principal, PrismaClient } from "../../generated/prisma/client.js";
import { nonBlank, parseInput } from "../validation.js";

/** Who a request acts for. Every service method that touches owned data takes one. */
export type Actor = { principalId: string };

/** The principal of keyless requests when authentication is not required (embedded default). */
export const DEVELOPMENT_PRINCIPAL_ID = "development";

const nameInput = z.object({ name: nonBlank(100) });

export const hashApiKey = (secret: string): string => createHash("sha256").update(secret, "utf8").digest("hex");

function newSecret(): { secret: string; prefix: string; hash: string } {
  const secret = `dsk_${randomBytes(24).toString("base64url")}`;
  return { secret, prefix: secret.slice(0, 12), hash: hashApiKey(secret) };
}

export class PrincipalService {
  constructor(private readonly deps: { prisma: PrismaClient }) {}

  /** Creates a principal with its first key; the returned secret is not stored anywhere. */
  async createPrincipal(input: { name: string }): Promise<{ principal: Principal; apiKey: ApiKey; secret: string }> {
    const { name } = parseInput(nameInput, input);
    const { secret, prefix, hash } = newSecret();
    const principal = await this.deps.prisma.principal.create({
      data: { name, apiKeys: { create: { name: "first key", prefix, hash } } },
      include: { apiKeys: true },
    });
    const [apiKey] = principal.apiKeys;
    if (!apiKey) throw new Error("a new principal must have its first key");
    return { principal, apiKey, secret };
  }

  /** Gives the acting principal an additional key. */
  async createApiKey(actor: Actor, input: { name: string }): Promise<{ apiKey: ApiKey; secret: string }> {
    const { name } = parseInput(nameInput, input);
    const { secret, prefix, hash } = newSecret();
    const apiKey = await this.deps.prisma.apiKey.create({ data: { principalId: actor.principalId, name, prefix, hash } });
    return { apiKey, secret };
  }

  /** The principal a key belongs to, or null for an unknown or revoked key. */
  async authenticate(secret: string): Promise<Actor | null> {
    const key = await this.deps.prisma.apiKey.findUnique({
      where: { hash: hashApiKey(secret) },
      select: { principalId: true, revokedAt: true },
    });
    return key && key.revokedAt === null ? { principalId: key.principalId } : null;
  }

  async ensureDevelopmentPrincipal(): Promise<Actor> {
    await this.deps.prisma.principal.upsert({
      where: { id: DEVELOPMENT_PRINCIPAL_ID },
      create: { id: DEVELOPMENT_PRINCIPAL_ID, name: "Development principal" },
      update: {},
    });
    return { principalId: DEVELOPMENT_PRINCIPAL_ID };
  }
}
