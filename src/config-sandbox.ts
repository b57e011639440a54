// The settings of the runs' sandbox folders (config.ts reads them with the rest of the environment):
// what one run's folder may hold, what a write may name, how long a folder is kept, and what all of
// one principal's folders and all folders together may hold.
import type { Config } from "./config-types.js";
import { whole } from "./config-rules.js";

export const sandboxEnv = {
  SANDBOX_MAX_BYTES: whole(1_024, "min").default(268_435_456),
  SANDBOX_MAX_ENTRIES: whole(1, "min").default(10_000),
  SANDBOX_MAX_PATH_DEPTH: whole(1, "min").default(16),
  SANDBOX_MAX_PATH_LENGTH: whole(16, "min").default(1_024),
  SANDBOX_MAX_BYTES_PER_PRINCIPAL: whole(1_024, "min").default(1_073_741_824),
  SANDBOX_MAX_BYTES_TOTAL: whole(1_024, "min").default(4_294_967_296),
  SANDBOX_RETENTION_HOURS: whole(0).default(24),
  SANDBOX_SWEEP_INTERVAL_MS: whole(1_000).default(600_000),
};

type SandboxValues = { DATA_DIR: string } & { [Name in keyof typeof sandboxEnv]: number };

/** Where the runs' sandbox folders are created (under DATA_DIR), and what they may hold. */
export function sandboxOf(values: SandboxValues): Pick<Config, "sandboxDir" | "sandbox"> {
  return {
    sandboxDir: `${values.DATA_DIR}/sandbox`,
    sandbox: {
      limits: {
        maxBytes: values.SANDBOX_MAX_BYTES,
        maxEntries: values.SANDBOX_MAX_ENTRIES,
        maxPathDepth: values.SANDBOX_MAX_PATH_DEPTH,
        maxPathLength: values.SANDBOX_MAX_PATH_LENGTH,
      },
      budgets: { perPrincipal: values.SANDBOX_MAX_BYTES_PER_PRINCIPAL, total: values.SANDBOX_MAX_BYTES_TOTAL },
      retentionHours: values.SANDBOX_RETENTION_HOURS,
      sweepIntervalMs: values.SANDBOX_SWEEP_INTERVAL_MS,
    },
  };
}
