// Settings too rich for one environment value's syntax: agent profiles (a JSON file), spill and
// compaction policies (JSON objects), trusted-document manifests (a folder of JSON files), each
// validated with a message naming where it went wrong.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "graphql";
import { z } from "zod";
import { ConfigError } from "./config-rules.js";
import type { AgentProfile } from "./runtime/agents.js";

/** Tool-name pattern → "always" | "never": which tool calls wait for a person's decision (TOOL_APPROVALS, a profile's toolApprovals). */
export const approvalRules = z.record(
  z.string().min(1, "tool name patterns must not be empty"),
  z.enum(["always", "never"], { error: 'must be "always" or "never"' }),
);

const agentProfiles = z
  .array(
    z.object({
      name: z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, "must be lower-case letters, digits, - and _"),
      systemPrompt: z.string().trim().min(1, "must not be empty"),
      tools: z.array(z.string().min(1)).optional(),
      skills: z.array(z.string().min(1)).optional(),
      toolApprovals: approvalRules.optional(),
    }),
  )
  .min(1, "must define at least one profile");

export const spillPolicies = z.record(
  z.string().min(1),
  z
    .object({
      enabled: z.boolean(),
      thresholdChars: z.number().int().min(1_000, "must be at least 1000"),
      previewChars: z.number().int().min(100, "must be at least 100"),
      strategy: z.enum(["auto", "head", "json-items"]),
    })
    .partial()
    .strict(),
);

export type CompactionPolicy = "never" | "stale" | "always";

const compactionPolicies = z.record(
  z.string().min(1, "tool names must not be empty"),
  z.enum(["never", "stale", "always"], { error: 'must be "never", "stale" or "always"' }),
);

/** Reads the agent profiles file: a JSON array of { name, systemPrompt, tools?, skills?, toolApprovals? }. */
export function readAgents(file: string): AgentProfile[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new ConfigError([`AGENTS_FILE=${JSON.stringify(file)}: cannot be read as JSON (${(error as Error).message})`]);
  }
  const parsed = agentProfiles.safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `AGENTS_FILE=${JSON.stringify(file)}: [${issue.path.join(".")}] ${issue.message}`));
  }
  return parsed.data;
}

/** Parses COMPACTION_POLICIES: a JSON object of tool name → "never" | "stale" | "always". */
export function parseCompactionPolicies(text: string): Record<string, CompactionPolicy> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError([`COMPACTION_POLICIES=${JSON.stringify(text)}: is not JSON (${(error as Error).message})`]);
  }
  const parsed = compactionPolicies.safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `COMPACTION_POLICIES: [${issue.path.join(".") || "(root)"}] ${issue.message}`));
  }
  return parsed.data;
}

/**
 * The trusted-document manifests in TRUSTED_DOCUMENTS_DIR: every *.json file in it, each a JSON
 * object of documentId → GraphQL document. An id two files give different documents is refused.
 */
export function readTrustedDocuments(dir: string): Record<string, string> {
  const where = (file?: string) => `TRUSTED_DOCUMENTS_DIR=${JSON.stringify(dir)}${file ? `: ${file}` : ""}`;
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((name) => name.endsWith(".json"))
      .sort();
  } catch (error) {
    throw new ConfigError([`${where()}: cannot be read (${(error as Error).message})`]);
  }
  const documents: Record<string, string> = {};
  const problems: string[] = [];
  for (const file of files) {
    let manifest: unknown;
    try {
      manifest = JSON.parse(readFileSync(path.join(dir, file), "utf8"));
    } catch (error) {
      problems.push(`${where(file)}: cannot be read as JSON (${(error as Error).message})`);
      continue;
    }
    if (typeof manifest !== "object" || manifest === null || Array.isArray(manifest)) {
      problems.push(`${where(file)}: must be a JSON object of documentId → document`);
      continue;
    }
    for (const [id, document] of Object.entries(manifest)) {
      const problem = documentProblem(id, document, documents[id]);
      if (problem) problems.push(`${where(file)}: [${id}] ${problem}`);
      else documents[id] = document;
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return documents;
}

function documentProblem(id: string, document: unknown, earlier: string | undefined): string | undefined {
  if (id === "") return "a documentId must not be empty";
  if (typeof document !== "string") return "must be the document's text";
  if (earlier !== undefined && earlier !== document) return "another manifest gives this documentId a different document";
  try {
    parse(document);
  } catch (error) {
    return `is not a GraphQL document (${(error as Error).message})`;
  }
  return undefined;
}
