// Agent profile versions (R0, W4): what a run executed under, as it was when the run was admitted.
// Profiles are the operator's configuration, the same for every principal: any caller reads them.
import type { AgentProfile } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { largeText } from "../large-text.js";
import { describePage, LIST_PAGE, type KeysetList, readConnection, listConnection } from "../list-connection.js";
import { profileNamesOf } from "../../domain/json-columns.js";

const PROFILES: KeysetList = {
  typename: "AgentProfile",
  order: [
    ["name", "asc"],
    ["version", "desc"],
  ],
  ...LIST_PAGE,
};

export const AgentProfileNode = builder.prismaNode("AgentProfile", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id) => ({ id }),
  description:
    "One version of an agent profile: its definition as configured (AGENTS_FILE, or built in) when that definition was first loaded. A changed definition is a new version; a version never changes.",
  fields: (t) => ({
    name: t.exposeString("name"),
    version: t.exposeInt("version", { description: "1 for the first definition of this name; each changed definition adds one." }),
    systemPrompt: t.exposeString("systemPrompt", { extensions: largeText() }),
    tools: t.stringList({
      nullable: true,
      description: "The tools its runs may use (exact names, or prefixes ending in *), sorted; null: every tool.",
      resolve: (profile) => profileNamesOf(profile.tools),
    }),
    skills: t.stringList({
      nullable: true,
      description: "The skills its runs may load (exact names, or prefixes ending in *), sorted; null: every skill.",
      resolve: (profile) => profileNamesOf(profile.skills),
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When this definition was first loaded." }),
  }),
});

builder.queryFields((t) => ({
  agentProfiles: listConnection(t, {
    type: "AgentProfile",
    name: "AgentProfileConnection",
    description: describePage("Every stored version of every agent profile, by name, newest version first.", PROFILES),
    list: PROFILES,
    resolve: (query, _root, args, ctx) => readConnection<AgentProfile>(ctx.prisma.agentProfile, PROFILES, args, { scope: {}, query }),
  }),
  agentProfile: t.prismaField({
    type: "AgentProfile",
    nullable: true,
    description: "A version of the named profile; without `version`, the newest. Null when there is none.",
    args: { name: t.arg.string({ required: true }), version: t.arg.int() },
    resolve: (query, _root, { name, version }, ctx) =>
      ctx.prisma.agentProfile.findFirst({ ...query, where: { name, ...(version == null ? {} : { version }) }, orderBy: { version: "desc" } }),
  }),
}));
