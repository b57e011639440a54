// The skills a run can load (R13): built-in skills shipped as Markdown files with front matter
// (./builtin/*.md), overlaid with the skills stored for the run's (principal, agent) — a stored
// skill replaces the built-in one of the same name. Read when a run starts; the model sees only
// names and descriptions until it loads a skill's body.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { SkillService } from "../../domain/capabilities/skill-service.js";
import { projectFile } from "../../project-files.js";
import type { CatalogSkill, SkillSource } from "../ports/skills.js";
import { batchedRead, groupedBy } from "../../domain/batched-reads.js";

export type { CatalogSkill, SkillSource };

export const BUILT_IN_SKILLS_DIR = projectFile("src", "runtime", "skills", "builtin");

/** Parses `---\nname: …\ndescription: …\n---\nbody`; throws naming the file when malformed. */
export function parseSkillFile(file: string, text: string): { name: string; description: string; body: string } {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!match) throw new Error(`${file}: a skill file starts with front matter between --- lines`);
  const fields = new Map<string, string>();
  for (const line of match[1]!.split(/\r?\n/)) {
    const field = /^([a-z]+):\s*(.*)$/.exec(line.trim());
    if (field) fields.set(field[1]!, field[2]!.trim());
  }
  const name = fields.get("name");
  const description = fields.get("description");
  if (!name || !/^[a-z0-9][a-z0-9-]{0,63}$/.test(name)) throw new Error(`${file}: front matter needs a name in kebab-case`);
  if (!description) throw new Error(`${file}: front matter needs a description`);
  return { name, description, body: match[2]!.trim() };
}

export class SkillCatalog {
  private builtIns?: Promise<CatalogSkill[]>;
  /** The stored skills of one (principal, agent), read with those of the other runs of its claim (batched-reads.ts). */
  private readonly stored: (owner: { principalId: string; agent: string }) => ReturnType<SkillService["loadable"]>;

  constructor(private readonly deps: { skills: Pick<SkillService, "loadable">; builtInDir?: string }) {
    const keyOf = ({ principalId, agent }: { principalId: string; agent: string }) => `${principalId}\u0000${agent}`;
    this.stored = batchedRead({
      readMany: async (owners) => groupedBy(await deps.skills.loadable(owners), (skill) => keyOf({ principalId: skill.ownerId, agent: skill.agent })),
      keyOf,
      none: () => [],
    });
  }

  /** The shipped skills, read once per process (they change only with a new release). */
  builtInSkills(): Promise<CatalogSkill[]> {
    this.builtIns ??= this.readBuiltIns();
    return this.builtIns;
  }

  /** The skills of one principal's runs under one agent, by name. */
  async forAgent(principalId: string, agent: string): Promise<CatalogSkill[]> {
    const [builtIns, stored] = await Promise.all([this.builtInSkills(), this.stored({ principalId, agent })]);
    const byName = new Map(builtIns.map((skill) => [skill.name, skill]));
    for (const skill of stored) {
      byName.set(skill.name, {
        storedId: skill.id,
        name: skill.name,
        description: skill.description,
        body: skill.body,
        source: "DATABASE",
        overridesBuiltIn: builtIns.some((b) => b.name === skill.name),
        updatedAt: skill.updatedAt,
      });
    }
    return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  private async readBuiltIns(): Promise<CatalogSkill[]> {
    const dir = this.deps.builtInDir ?? BUILT_IN_SKILLS_DIR;
    const files = (await readdir(dir)).filter((file) => file.endsWith(".md")).sort();
    return Promise.all(
      files.map(async (file) => ({
        storedId: null,
        ...parseSkillFile(file, await readFile(path.join(dir, file), "utf8")),
        source: "BUILT_IN" as const,
        overridesBuiltIn: false,
        updatedAt: null,
      })),
    );
  }
}
