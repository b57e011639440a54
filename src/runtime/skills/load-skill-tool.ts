// The load_skill tool (R13): its description lists the run's skills (name and description) —
// that is all of them the model context carries — and a call returns one skill's body, inside
// a SKILL_LOAD span under the tool call.
import type { ToolSchema } from "../ports/model.js";
import { type Tool, ToolError } from "../ports/tool.js";
import type { TraceSink } from "../ports/trace-sink.js";
import { withSpan } from "../loop/spans.js";
import type { CatalogSkill } from "./skill-catalog.js";

export const LOAD_SKILL = "load_skill";

/** Schemas of recent skill lists (name and description of each), bounded; see schemaOf. */
const schemas = new Map<string, ToolSchema>();
const SCHEMAS_KEPT = 64;

/**
 * The schema for a skill list: the same object for runs offered the same skills (most runs offer
 * the same built-in ones), so the request budget counts its tokens once (memo-cache.ts).
 */
function schemaOf(skills: readonly CatalogSkill[]): ToolSchema {
  const key = JSON.stringify(skills.map((skill) => [skill.name, skill.description]));
  let schema = schemas.get(key);
  if (!schema) {
    const list = skills.map((skill) => `- ${skill.name}: ${skill.description}`).join("\n");
    schema = {
      name: LOAD_SKILL,
      description: `Loads the full instructions of a skill when the task matches its description. Available skills:\n${list}`,
      parameters: {
        type: "object",
        properties: { name: { type: "string", enum: skills.map((skill) => skill.name) } },
        required: ["name"],
      },
    };
    if (schemas.size >= SCHEMAS_KEPT) schemas.delete(schemas.keys().next().value!);
    schemas.set(key, schema);
  }
  return schema;
}

/** The tool over a run's pinned skill list; null when there are no skills to offer. */
export function createLoadSkillTool(skills: readonly CatalogSkill[], sink: TraceSink): Tool | null {
  if (skills.length === 0) return null;
  const byName = new Map(skills.map((skill) => [skill.name, skill]));
  return {
    schema: schemaOf(skills),
    async execute(args, context) {
      const name = (args as { name?: unknown })?.name;
      const skill = typeof name === "string" ? byName.get(name) : undefined;
      if (!skill) throw new ToolError(`There is no skill named ${JSON.stringify(name)}. Available: ${[...byName.keys()].join(", ")}.`);
      return withSpan(
        sink,
        {
          traceId: context.span.traceId,
          parent: context.span,
          kind: "SKILL_LOAD",
          name: `load_skill ${skill.name}`,
          attributes: { "skill.name": skill.name, "skill.source": skill.source, "skill.bytes": Buffer.byteLength(skill.body, "utf8") },
        },
        async () => skill.body,
      );
    },
  };
}
