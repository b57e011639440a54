// How large tool results are spilled (R10): the runtime's policy type and its defaults. The
// configuration parses SPILL_POLICIES into it (config-files.ts).

/** How one tool's large results are spilled (R10); every field falls back to the "*" entry, then the defaults. */
export type SpillPolicy = {
  enabled: boolean;
  /** Results longer than this many characters are spilled. */
  thresholdChars: number;
  /** How many characters the model sees in place of the result. */
  previewChars: number;
  /** "auto": whole leading items for a JSON list (or an object holding one), else "head". */
  strategy: "auto" | "head" | "json-items";
};

/** The tool that reads spills back; its own results are never spilled. */
export const READ_SPILL_TOOL = "read_spill";

export const DEFAULT_SPILL_POLICY: SpillPolicy = { enabled: true, thresholdChars: 32_000, previewChars: 2_048, strategy: "auto" };
