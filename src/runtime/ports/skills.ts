// The skills port (R13): the skills a run of an agent can load, as the API shows them. The skill
// catalog (src/runtime/skills) implements it over the built-in files and the database.

export type SkillSource = "BUILT_IN" | "DATABASE";

export type CatalogSkill = {
  /** A stored skill's row id; null for a built-in skill. */
  storedId: string | null;
  name: string;
  description: string;
  body: string;
  source: SkillSource;
  /** A stored skill that replaces a built-in skill of the same name. */
  overridesBuiltIn: boolean;
  updatedAt: Date | null;
};

/** The effective skills: the built-in ones, and those a principal's agent sees (stored over built-in). */
export interface SkillsView {
  builtInSkills(): Promise<CatalogSkill[]>;
  forAgent(principalId: string, agent: string): Promise<CatalogSkill[]>;
}
