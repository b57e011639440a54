// Skills stored per (principal, agent profile) (R13): validated, upserted by name, deleted by
// name. Built-in skills are the runtime's; a stored skill of the same name overrides one for
// the runs of that principal and agent. Runs read skills when they start, so a change applies
// from the next run on.
import { z } from "zod";
import type { PrismaClient, Skill } from "../../generated/prisma/client.js";
import { NotFoundError, ValidationError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { parseInput } from "../validation.js";
import { lockPrincipalRow } from "../principal/principal-lock.js";

export const SKILL_BODY_MAX = 64 * 1024;
export const SKILL_DESCRIPTION_MAX = 300;
/** Stored skills of one (principal, agent); their names and descriptions go into every run's context. */
export const SKILLS_PER_AGENT_MAX = 100;

export const skillName = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, "must be lower-case letters, digits and - (at most 64), e.g. stuck-payment");
const agentName = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, "must be an agent profile name such as researcher");

const upsertInput = z.object({
  agent: agentName.nullish().transform((v) => v ?? "researcher"),
  name: skillName,
  description: z
    .string()
    .trim()
    .min(1, "must not be empty")
    .max(SKILL_DESCRIPTION_MAX, `must be at most ${SKILL_DESCRIPTION_MAX} characters`)
    .refine((v) => !/[\r\n]/.test(v), "must be one line"),
  body: z
    .string()
    .refine((v) => v.trim() !== "", "must not be empty")
    .refine((v) => Buffer.byteLength(v, "utf8") <= SKILL_BODY_MAX, `must be at most ${SKILL_BODY_MAX} bytes`),
});
const deleteInput = z.object({ agent: agentName.nullish().transform((v) => v ?? "researcher"), name: skillName });

export type UpsertSkillInput = z.input<typeof upsertInput>;
export type DeleteSkillInput = z.input<typeof deleteInput>;

export class SkillService {
  constructor(private readonly deps: { prisma: PrismaClient; agentNames: ReadonlySet<string> }) {}

  /** The caller's stored skills for one agent, by name. */
  list(actor: Actor, agent: string): Promise<Skill[]> {
    return this.deps.prisma.skill.findMany({ where: { ownerId: actor.principalId, agent }, orderBy: { name: "asc" } });
  }

  /**
   * The stored skills runs can load, of each (principal, agent) in `owners`, by name: one read for
   * every run that starts together (runtime/skills/skill-catalog.ts).
   */
  loadable(owners: readonly { principalId: string; agent: string }[]): Promise<Skill[]> {
    if (owners.length === 0) return Promise.resolve([]);
    // Upserts keep an agent at SKILLS_PER_AGENT_MAX stored skills, so no (principal, agent) has more to drop.
    return this.deps.prisma.skill.findMany({
      where: { OR: owners.map(({ principalId, agent }) => ({ ownerId: principalId, agent })) },
      orderBy: { name: "asc" },
      take: SKILLS_PER_AGENT_MAX * owners.length,
    });
  }

  async upsert(actor: Actor, input: UpsertSkillInput): Promise<Skill> {
    const { agent, name, description, body } = parseInput(upsertInput, input);
    this.assertAgent(agent);
    return this.deps.prisma.$transaction(async (tx) => {
      await lockPrincipalRow(tx, actor.principalId);
      const existing = await tx.skill.findUnique({ where: { ownerId_agent_name: { ownerId: actor.principalId, agent, name } } });
      if (!existing && (await tx.skill.count({ where: { ownerId: actor.principalId, agent } })) >= SKILLS_PER_AGENT_MAX) {
        throw new ValidationError([{ field: "name", message: `an agent may have at most ${SKILLS_PER_AGENT_MAX} stored skills` }]);
      }
      return tx.skill.upsert({
        where: { ownerId_agent_name: { ownerId: actor.principalId, agent, name } },
        create: { ownerId: actor.principalId, agent, name, description, body },
        update: { description, body },
      });
    });
  }

  /** Removes a stored skill; a built-in skill of the same name applies again from the next run. */
  async delete(actor: Actor, input: DeleteSkillInput): Promise<Skill> {
    const { agent, name } = parseInput(deleteInput, input);
    const where = { ownerId_agent_name: { ownerId: actor.principalId, agent, name } };
    const existing = await this.deps.prisma.skill.findUnique({ where });
    if (!existing) throw new NotFoundError("Skill", `${agent}/${name}`);
    await this.deps.prisma.skill.deleteMany({ where: { id: existing.id } });
    return existing;
  }

  private assertAgent(agent: string): void {
    if (!this.deps.agentNames.has(agent)) {
      throw new ValidationError([{ field: "agent", message: `there is no agent profile named "${agent}"` }]);
    }
  }
}
