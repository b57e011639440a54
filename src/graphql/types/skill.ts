// Skills (R13): the effective list a principal's runs see under one agent, and the stored
// skills that override or extend the built-in ones.
import { LIST_ITEMS } from "../list-connection.js";
import { allowedBy } from "../../domain/capabilities/agent-profile-versions.js";
import { SKILL_BODY_MAX, SKILLS_PER_AGENT_MAX } from "../../domain/capabilities/skill-service.js";
import { NotFoundError, ValidationError } from "../../domain/errors.js";
import type { CatalogSkill } from "../../runtime/ports/skills.js";
import { builder } from "../builder.js";
import { largeText } from "../large-text.js";
import type { GraphQLContext } from "../context.js";
import { loadBatched } from "../request-batch.js";
import { mine } from "./owned.js";

type SkillView = CatalogSkill & { agent: string };

const SkillSourceEnum = builder.enumType("SkillSource", {
  values: {
    BUILT_IN: { description: "Shipped with Dossier (a Markdown file in the repository)." },
    DATABASE: { description: "Stored for you and this agent through upsertSkill." },
  },
});

const BUILT_IN_ID = /^builtin:(.+):([^:]+)$/;

/**
 * A skill's node id: a stored skill is its row (its owner's alone); a built-in skill, which every
 * principal's runs see, is named by its agent and name.
 */
const skillId = (skill: SkillView) => skill.storedId ?? `builtin:${skill.agent}:${skill.name}`;

async function loadSkill(id: string, ctx: GraphQLContext): Promise<SkillView | null> {
  const builtIns = await ctx.capabilities.skills.builtInSkills();
  const builtIn = BUILT_IN_ID.exec(id);
  if (builtIn) {
    const skill = builtIns.find((s) => s.name === builtIn[2]);
    return skill ? { ...skill, agent: builtIn[1]! } : null;
  }
  const stored = await ctx.prisma.skill.findFirst({ where: { id, ...mine(ctx) } });
  if (!stored) return null;
  return {
    storedId: stored.id,
    name: stored.name,
    description: stored.description,
    body: stored.body,
    source: "DATABASE",
    overridesBuiltIn: builtIns.some((s) => s.name === stored.name),
    updatedAt: stored.updatedAt,
    agent: stored.agent,
  };
}

const SkillRef = builder.node(builder.objectRef<SkillView>("Skill"), {
  id: { resolve: skillId },
  loadWithoutCache: (id, ctx) => loadSkill(id, ctx),
  description: "Instructions a run can load on demand with the load_skill tool. The model sees only names and descriptions until it loads one.",
  fields: (t) => ({
    name: t.exposeString("name"),
    description: t.exposeString("description", { description: "What the model reads to decide whether to load the skill." }),
    body: t.exposeString("body", { extensions: largeText(SKILL_BODY_MAX), description: "The instructions load_skill returns." }),
    agent: t.exposeString("agent", { description: "The agent profile whose runs see the skill." }),
    source: t.field({ type: SkillSourceEnum, resolve: (skill) => skill.source }),
    overridesBuiltIn: t.exposeBoolean("overridesBuiltIn", { description: "A stored skill that replaces the built-in skill of the same name." }),
    updatedAt: t.field({
      type: "DateTime",
      nullable: true,
      description: "Last change of a stored skill; null for built-in skills.",
      resolve: (skill) => skill.updatedAt,
    }),
  }),
});

/** One agent's skills, read once however many fields (aliases) of one request list them together. */
async function skillsOf(ctx: GraphQLContext, agent: string): Promise<CatalogSkill[]> {
  const read = (agents: string[]) =>
    Promise.all(agents.map(async (each) => [each, await ctx.capabilities.skills.forAgent(ctx.actor.principalId, each)] as const)).then(
      (pairs) => new Map(pairs),
    );
  return (await loadBatched(ctx, "skills", agent, read)) ?? [];
}

builder.queryField("skills", (t) =>
  t.field({
    type: [SkillRef],
    extensions: { [LIST_ITEMS]: SKILLS_PER_AGENT_MAX },
    description: `The skills your runs under this agent can load, by name: built-in skills overlaid with your stored ones (at most ${SKILLS_PER_AGENT_MAX} per agent), those the agent profile's skill list allows, all of them. Changes apply from the next run.`,
    args: { agent: t.arg.string({ defaultValue: "researcher", required: true }) },
    resolve: async (_root, { agent }, ctx) => {
      const allowed = ctx.services.agentProfiles.definition(agent)?.skills;
      return (await skillsOf(ctx, agent)).filter((skill) => allowedBy(allowed, skill.name)).map((skill) => ({ ...skill, agent }));
    },
  }),
);

const UpsertSkillInput = builder.inputType("UpsertSkillInput", {
  fields: (t) => ({
    agent: t.string({ description: "The agent profile (default researcher)." }),
    name: t.string({ required: true, description: "kebab-case, at most 64 characters; the name of a built-in skill overrides it." }),
    description: t.string({ required: true, description: "One line, at most 300 characters." }),
    body: t.string({ required: true, description: "Markdown instructions, at most 64 KiB." }),
  }),
});

const UpsertSkillSuccess = builder.objectRef<{ skill: SkillView }>("UpsertSkillSuccess").implement({
  fields: (t) => ({ skill: t.field({ type: SkillRef, resolve: (result) => result.skill }) }),
});

builder.mutationField("upsertSkill", (t) =>
  t.field({
    type: UpsertSkillSuccess,
    description: "Creates or replaces your stored skill of this name for this agent. Runs started afterwards see it.",
    args: { input: t.arg({ type: UpsertSkillInput, required: true }) },
    errors: { types: [ValidationError], directResult: true, union: { name: "UpsertSkillPayload" } },
    resolve: async (_root, { input }, ctx) => {
      const stored = await ctx.services.skills.upsert(ctx.actor, input);
      const skill = (await ctx.capabilities.skills.forAgent(ctx.actor.principalId, stored.agent)).find((s) => s.name === stored.name)!;
      return { skill: { ...skill, agent: stored.agent } };
    },
  }),
);

const DeleteSkillInput = builder.inputType("DeleteSkillInput", {
  fields: (t) => ({
    agent: t.string({ description: "The agent profile (default researcher)." }),
    name: t.string({ required: true }),
  }),
});

const DeleteSkillSuccess = builder.objectRef<{ deletedName: string; agent: string; builtIn: SkillView | null }>("DeleteSkillSuccess").implement({
  fields: (t) => ({
    deletedName: t.exposeString("deletedName"),
    agent: t.exposeString("agent"),
    builtIn: t.field({
      type: SkillRef,
      nullable: true,
      description: "The built-in skill of the same name, which applies again from the next run.",
      resolve: (result) => result.builtIn,
    }),
  }),
});

builder.mutationField("deleteSkill", (t) =>
  t.field({
    type: DeleteSkillSuccess,
    description: "Deletes your stored skill of this name for this agent. Built-in skills cannot be deleted, only overridden.",
    args: { input: t.arg({ type: DeleteSkillInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "DeleteSkillPayload" } },
    resolve: async (_root, { input }, ctx) => {
      const deleted = await ctx.services.skills.delete(ctx.actor, input);
      const builtIn = (await ctx.capabilities.skills.forAgent(ctx.actor.principalId, deleted.agent)).find(
        (s) => s.name === deleted.name && s.source === "BUILT_IN",
      );
      return { deletedName: deleted.name, agent: deleted.agent, builtIn: builtIn ? { ...builtIn, agent: deleted.agent } : null };
    },
  }),
);
