// Agent profile versions (R0, W4). A profile's definition — system prompt, tool and skill
// allow-lists — comes from configuration (the built-in researcher, AGENTS_FILE) and may change
// between starts. Each distinct definition is stored once as an immutable version, so admission
// can freeze the version a run executes and a finished run can say which prompt produced it.
//
// A definition is compared with the newest stored version of its name by a hash of its normalised
// form: unchanged, the newest version stands; changed, the next version is inserted. Instances
// starting at once with the same file race for the same (name, version); the unique key lets one
// insert win, and the others find the winner's version equal to theirs.
import { createHash, randomUUID } from "node:crypto";
import type { AgentProfile as StoredProfile, PrismaClient } from "../../generated/prisma/client.js";
import { approvalRulesOf, profileNamesOf } from "../json-columns.js";

/** Tool-name pattern → whether its calls wait for a person's decision. */
export type ToolApprovalRules = Readonly<Record<string, "always" | "never">>;

/** A profile as configured. */
export type AgentDefinition = {
  name: string;
  systemPrompt: string;
  tools?: readonly string[];
  skills?: readonly string[];
  toolApprovals?: ToolApprovalRules;
};

/** A stored version as a run executes it: an absent allow-list admits every name. */
export type FrozenDefinition = { name: string; systemPrompt: string; tools?: string[]; skills?: string[]; toolApprovals?: Record<string, "always" | "never"> };

export type { StoredProfile };

/**
 * Whether an allow-list (a profile's `tools` or `skills`) admits a name. Entries are exact names,
 * or a prefix ending in `*`: `mcp__github__*` admits every tool of the MCP server `github`. Without
 * a list, every name is admitted.
 */
export function allowedBy(allowList: readonly string[] | null | undefined, name: string): boolean {
  if (!allowList) return true;
  return allowList.some((entry) => (entry.endsWith("*") ? name.startsWith(entry.slice(0, -1)) : entry === name));
}

type Normalised = { systemPrompt: string; tools: string[] | null; skills: string[] | null; toolApprovals: Record<string, "always" | "never"> | null };

/** A definition in the form it is hashed and stored: allow-lists sorted, each entry once; absent lists null; approval rules by pattern. */
export function normalise(definition: AgentDefinition): Normalised {
  const list = (entries: readonly string[] | undefined) => (entries ? [...new Set(entries)].sort() : null);
  const rules = definition.toolApprovals;
  const toolApprovals = rules ? Object.fromEntries(Object.entries(rules).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : null;
  return { systemPrompt: definition.systemPrompt, tools: list(definition.tools), skills: list(definition.skills), toolApprovals };
}

export function contentHash(definition: AgentDefinition): string {
  const { systemPrompt, tools, skills, toolApprovals } = normalise(definition);
  // Approval rules join the hash only when a profile has them: a profile stored before they
  // existed keeps its hash, and no new version of it is stored.
  return createHash("sha256")
    .update(JSON.stringify([systemPrompt, tools, skills, ...(toolApprovals ? [toolApprovals] : [])]))
    .digest("hex");
}

function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e?.code === "P2002" || /unique constraint/i.test(e?.message ?? "");
}

/** How often an instance retries after losing an insert to another instance's different definition. */
const ATTEMPTS = 5;

/**
 * The stored version of `definition`: the newest version of its name when that one has the same
 * content, else a new version after it.
 */
export async function storeDefinition(prisma: PrismaClient, definition: AgentDefinition, now = new Date()): Promise<StoredProfile> {
  const hash = contentHash(definition);
  const normalised = normalise(definition);
  for (let attempt = 1; ; attempt += 1) {
    const newest = await prisma.agentProfile.findFirst({ where: { name: definition.name }, orderBy: { version: "desc" } });
    if (newest?.contentHash === hash) return newest;
    try {
      return await prisma.agentProfile.create({
        data: {
          id: randomUUID(),
          name: definition.name,
          version: (newest?.version ?? 0) + 1,
          contentHash: hash,
          systemPrompt: normalised.systemPrompt,
          // Prisma's JSON null for an absent list: every tool (or skill) is allowed.
          tools: normalised.tools ?? undefined,
          skills: normalised.skills ?? undefined,
          toolApprovals: normalised.toolApprovals ?? undefined,
          createdAt: now,
        },
      });
    } catch (error) {
      // Another instance inserted this version first: read again what it stored.
      if (!isUniqueViolation(error) || attempt >= ATTEMPTS) throw error;
    }
  }
}

/**
 * The profiles runs may be admitted under, each resolved to its stored version once per instance:
 * at start (load) or, failing that, at the first admission that names it.
 */
export class AgentProfileVersions {
  readonly names: ReadonlySet<string>;
  private readonly definitions: Map<string, AgentDefinition>;
  private loading?: Promise<Map<string, StoredProfile>>;

  constructor(private readonly deps: { prisma: PrismaClient; definitions: readonly AgentDefinition[] }) {
    this.definitions = new Map(deps.definitions.map((definition) => [definition.name, definition]));
    this.names = new Set(this.definitions.keys());
  }

  /** The named profile as configured now (runs already admitted may execute an older version). */
  definition(name: string): AgentDefinition | undefined {
    return this.definitions.get(name);
  }

  /** Stores a new version of every profile whose definition changed; idempotent. */
  load(): Promise<Map<string, StoredProfile>> {
    this.loading ??= this.storeAll().catch((error: unknown) => {
      // A failed load (the database was unreachable) is tried again by the next caller.
      this.loading = undefined;
      throw error;
    });
    return this.loading;
  }

  /** The version a run admitted now under `name` executes; `name` must be one of `names`. */
  async current(name: string): Promise<StoredProfile> {
    const stored = (await this.load()).get(name);
    if (!stored) throw new Error(`agent profile ${name} is not configured`);
    return stored;
  }

  /** The stored version `id` (one a run was admitted under), whatever the configuration says now. */
  async version(id: string): Promise<FrozenDefinition> {
    const stored = await this.deps.prisma.agentProfile.findUniqueOrThrow({ where: { id } });
    return {
      name: stored.name,
      systemPrompt: stored.systemPrompt,
      ...(stored.tools === null ? {} : { tools: profileNamesOf(stored.tools)! }),
      ...(stored.skills === null ? {} : { skills: profileNamesOf(stored.skills)! }),
      ...(stored.toolApprovals === null ? {} : { toolApprovals: approvalRulesOf(stored.toolApprovals)! }),
    };
  }

  private async storeAll(): Promise<Map<string, StoredProfile>> {
    const stored = new Map<string, StoredProfile>();
    // One at a time: a handful of profiles, and no reason to hold several connections at start.
    for (const definition of this.definitions.values()) stored.set(definition.name, await storeDefinition(this.deps.prisma, definition));
    return stored;
  }
}
