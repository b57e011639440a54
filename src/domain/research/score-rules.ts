// What a score config may say and what a score may carry under it (issue 39). Pure rules: the
// service (score-service.ts) reads and writes, these only decide.
//   NUMERIC      a value, within [min, max] where a bound is given (either bound may be open); no label.
//   CATEGORICAL  a label among the config's categories; no value (a category has no number to average).
//   BOOLEAN      value 0 or 1, or label "true" or "false" (both, if they agree); stored as both.
import { z } from "zod";
import type { ScoreConfig, ScoreKind } from "../../generated/prisma/client.js";
import { ValidationError, type ValidationIssue } from "../errors.js";
import { nonBlank, parseInput } from "../validation.js";

export const SCORE_CONFIG_NAME_MAX = 64;
export const SCORE_CATEGORIES_MAX = 50;
export const SCORE_CATEGORY_MAX = 64;
export const SCORE_DESCRIPTION_MAX = 1_000;
export const SCORE_COMMENT_MAX = 2_000;
export const SCORE_CONFIGS_PER_PRINCIPAL_MAX = 200;

const finite = z.number().refine(Number.isFinite, "must be a finite number");

const configInput = z.object({
  name: nonBlank(SCORE_CONFIG_NAME_MAX),
  kind: z.enum(["NUMERIC", "CATEGORICAL", "BOOLEAN"]),
  min: finite.nullish(),
  max: finite.nullish(),
  categories: z.array(nonBlank(SCORE_CATEGORY_MAX)).nullish(),
  description: nonBlank(SCORE_DESCRIPTION_MAX).nullish(),
});

export type ScoreConfigInput = z.input<typeof configInput>;
export type ScoreConfigSettings = { name: string; kind: ScoreKind; min: number | null; max: number | null; categories: string[]; description: string | null };

/** A config's settings as they are stored, or one ValidationError naming every field that is wrong. */
export function scoreConfigSettings(input: ScoreConfigInput): ScoreConfigSettings {
  const parsed = parseInput(configInput, input);
  const issues: ValidationIssue[] = [];
  const min = parsed.min ?? null;
  const max = parsed.max ?? null;
  const categories = parsed.categories ?? [];
  if (parsed.kind === "NUMERIC") {
    if (min !== null && max !== null && !(min < max)) issues.push({ field: "max", message: "must be greater than min" });
    if (categories.length > 0) issues.push({ field: "categories", message: "are for a CATEGORICAL config only" });
  } else {
    if (min !== null) issues.push({ field: "min", message: "is for a NUMERIC config only" });
    if (max !== null) issues.push({ field: "max", message: "is for a NUMERIC config only" });
  }
  if (parsed.kind === "CATEGORICAL") {
    if (categories.length === 0) issues.push({ field: "categories", message: "must name at least one category" });
    if (categories.length > SCORE_CATEGORIES_MAX) issues.push({ field: "categories", message: `must name at most ${SCORE_CATEGORIES_MAX} categories` });
    const twice = categories.find((category, index) => categories.indexOf(category) !== index);
    if (twice !== undefined) issues.push({ field: "categories", message: `must be distinct ("${twice}" is named twice)` });
  }
  if (parsed.kind === "BOOLEAN" && categories.length > 0) issues.push({ field: "categories", message: "are for a CATEGORICAL config only" });
  if (issues.length > 0) throw new ValidationError(issues);
  return { name: parsed.name, kind: parsed.kind, min, max, categories, description: parsed.description ?? null };
}

/** Whether an existing config says exactly what `settings` say (createScoreConfig is then idempotent). */
export function sameSettings(config: ScoreConfig, settings: ScoreConfigSettings): boolean {
  return (
    config.kind === settings.kind &&
    config.min === settings.min &&
    config.max === settings.max &&
    config.description === settings.description &&
    config.categories.length === settings.categories.length &&
    config.categories.every((category, index) => category === settings.categories[index])
  );
}

/** What a score stores for its config: the value and label, checked. */
export function scoreReading(
  config: ScoreConfig,
  value: number | null | undefined,
  label: string | null | undefined,
): { value: number | null; label: string | null } {
  const refuse = (field: string, message: string): never => {
    throw new ValidationError([{ field, message }]);
  };
  const given = value ?? null;
  const named = label ?? null;
  if (given !== null && !Number.isFinite(given)) refuse("value", "must be a finite number");
  switch (config.kind) {
    case "NUMERIC":
      if (named !== null) refuse("label", `"${config.name}" is NUMERIC: send a value, not a label`);
      if (given === null) return refuse("value", `is required by "${config.name}" (NUMERIC)`);
      if (config.min !== null && given < config.min) refuse("value", `must be at least ${config.min} ("${config.name}")`);
      if (config.max !== null && given > config.max) refuse("value", `must be at most ${config.max} ("${config.name}")`);
      return { value: given, label: null };
    case "CATEGORICAL":
      if (given !== null) refuse("value", `"${config.name}" is CATEGORICAL: send a label, not a value`);
      if (named === null) return refuse("label", `is required by "${config.name}" (CATEGORICAL)`);
      if (!config.categories.includes(named)) refuse("label", `must be one of ${config.categories.map((c) => `"${c}"`).join(", ")}`);
      return { value: null, label: named };
    case "BOOLEAN": {
      if (given !== null && given !== 0 && given !== 1) refuse("value", "must be 0 or 1 for a BOOLEAN config");
      if (named !== null && named !== "true" && named !== "false") refuse("label", 'must be "true" or "false" for a BOOLEAN config');
      if (given === null && named === null) return refuse("value", `a value (0 or 1) or a label ("true" or "false") is required by "${config.name}"`);
      const truth = given !== null ? given === 1 : named === "true";
      if (given !== null && named !== null && truth !== (named === "true")) refuse("label", 'must agree with value (1 is "true", 0 is "false")');
      return { value: truth ? 1 : 0, label: truth ? "true" : "false" };
    }
  }
}
