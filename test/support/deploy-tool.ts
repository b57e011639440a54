// A "deploy" tool (one string argument, target) that counts its calls: tests hold it for
// approval and check that a call nobody approved never ran.
import type { Tool } from "../../src/runtime/ports/tool.js";

export function countedDeployTool(): { tool: Tool; calls: () => number; reset: () => void } {
  let executed = 0;
  const tool: Tool = {
    schema: { name: "deploy", description: "deploys", parameters: { type: "object", properties: { target: { type: "string" } } } },
    execute: async () => {
      executed += 1;
      return "deployed";
    },
  };
  return { tool, calls: () => executed, reset: () => void (executed = 0) };
}
