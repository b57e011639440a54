// A tool named "wait" that holds its run until the test opens it, so the run can be watched (or
// stopped: a stop aborts the call) while it lives.
import type { Tool } from "../../src/runtime/ports/tool.js";

export function gateTool(): { tool: Tool; state: { reached: boolean; open: () => void } } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const state = { reached: false, open };
  const tool: Tool = {
    schema: { name: "wait", description: "waits for the test", parameters: { type: "object" } },
    execute: (_args, { signal }) =>
      new Promise((resolve, reject) => {
        state.reached = true;
        void opened.then(() => resolve("opened"));
        signal.addEventListener("abort", () => reject(new Error("aborted")));
      }),
  };
  return { tool, state };
}
