// The rules environment values are checked by (config.ts), each refusal worded for an operator.
import { z } from "zod";

/** Settings that cannot be used, each named with what is wrong with it. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

export const number = z.coerce.number({ error: "must be a number" });

export const port = number.int("must be a whole number").min(0, "must be between 0 and 65535").max(65535, "must be between 0 and 65535");

/**
 * A whole number of at least `min`. `worded` says which refusals are in Dossier's words ("must be
 * at least 500", "must be a whole number") rather than zod's; each setting keeps the wording it has.
 */
export const whole = (min: number, worded: "none" | "min" | "both" = "none", tooSmall = min === 0 ? "must not be negative" : `must be at least ${min}`) =>
  number.int(worded === "both" ? "must be a whole number" : undefined).min(min, worded === "none" ? undefined : tooSmall);

/** Exactly "true" or "false". */
export const flag = z.stringbool({ truthy: ["true"], falsy: ["false"], case: "sensitive", error: "must be true or false" });

export const postgresUrl = z.string().refine((value) => /^postgres(ql)?:\/\/.+/.test(value), {
  message: "must be a PostgreSQL URL such as postgresql://user@host:5432/dossier",
});

/** JSON text, parsed (its shape is checked by what it is piped to). */
export const json = (example: string) =>
  z.string().transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: "custom", message: `must be JSON such as ${example}` });
      return z.NEVER;
    }
  });

/** A comma-separated list: entries trimmed (and normalised), empty ones dropped, each checked. */
export const commaList = (valid: (entry: string) => boolean, what: string, example: string, normalise = (entry: string) => entry) =>
  z
    .string()
    .transform((value) =>
      value
        .split(",")
        .map((entry) => normalise(entry.trim()))
        .filter((entry) => entry !== ""),
    )
    .refine((entries) => entries.every(valid), { message: `must be ${what} separated by commas, such as ${example}` });

/** Host names (and host:port) named exactly, lower-cased: no wildcards. */
export const exactHosts = (example: string) =>
  commaList(
    (host) => /^[a-z0-9.-]+(:\d{1,5})?$/.test(host),
    "host names without wildcards",
    example,
    (host) => host.toLowerCase(),
  );

/** Positive numbers of seconds, fractions allowed. */
export const secondsList = (example: string) =>
  commaList((value) => /^\d+(\.\d+)?$/.test(value) && Number(value) > 0, "positive numbers of seconds", example).transform((values) => values.map(Number));

/**
 * The environment's values by `schema`; throws ConfigError listing every bad one. An empty
 * variable means "not set", as in most shells' `VAR= command`.
 */
export function parseEnv<T extends z.ZodType>(
  schema: T,
  env: Record<string, string | undefined>,
): { values: z.output<T>; present: Record<string, string | undefined> } {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""));
  const parsed = schema.safeParse(present);
  if (parsed.success) return { values: parsed.data, present };
  throw new ConfigError(
    parsed.error.issues.map((issue) => {
      // A nested issue (inside SPILL_POLICIES' JSON) names the variable and where in it.
      const [name, ...inside] = issue.path.map(String);
      const where = inside.length > 0 ? ` at ${inside.join(".")}` : "";
      return `${name}=${JSON.stringify(env[name!] ?? "")}${where}: ${issue.message}`;
    }),
  );
}
