// A tool whose schema depends only on settings the server holds for its life (run_command's,
// http_fetch's) gets one schema object per settings object, not one per run: the request budget
// counts a list of schemas once by their identity (memory/memo-cache.ts), so runs offered the same
// tools share that count.
import type { ToolSchema } from "../ports/model.js";

/** `schemaOf(settings)`: `build(settings)`, built once per settings object. */
export function schemaPer<S extends object>(build: (settings: S) => ToolSchema): (settings: S) => ToolSchema {
  const built = new WeakMap<S, ToolSchema>();
  return (settings) => {
    let schema = built.get(settings);
    if (!schema) built.set(settings, (schema = build(settings)));
    return schema;
  };
}
