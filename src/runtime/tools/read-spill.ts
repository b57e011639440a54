// read_spill (R11, R15): the built-in tool that reads back a spilled tool result by byte range,
// JSON path or page. Only handles of the run's own conversation are readable, and only while
// their run lives (R12); each mistake is an error the model can act on.
import { fromStored } from "../../domain/text/stored-text.js";
import type { SpillStore } from "../ports/spill-store.js";
import { type Tool, ToolError } from "../ports/tool.js";
import { readBack, type ReadRequest } from "../spill/read-back.js";
import { READ_SPILL_TOOL } from "../spill/spill-policy.js";

export { READ_SPILL_TOOL };

function parseArgs(args: unknown): { handle: string; request: ReadRequest } {
  const a = (args ?? {}) as Record<string, unknown>;
  if (typeof a.handle !== "string" || !a.handle.startsWith("spill://")) {
    throw new ToolError('Give the handle from the spilled result, e.g. {"handle":"spill://…","page":1}.');
  }
  const modes = (["range", "jsonPath", "page"] as const).filter((key) => a[key] !== undefined && a[key] !== null);
  if (modes.length !== 1) throw new ToolError("Give exactly one of range, jsonPath or page.");
  const range = a.range as { start?: unknown; end?: unknown } | undefined;
  if (modes[0] === "range") {
    if (typeof range !== "object" || typeof range.start !== "number" || typeof range.end !== "number") {
      throw new ToolError('range is {"start":<byte>,"end":<byte>}, end exclusive.');
    }
    return { handle: a.handle, request: { range: { start: range.start, end: range.end } } };
  }
  if (modes[0] === "jsonPath") {
    if (typeof a.jsonPath !== "string") throw new ToolError('jsonPath is a string such as "$.items[3:6]".');
    return { handle: a.handle, request: { jsonPath: a.jsonPath } };
  }
  if (typeof a.page !== "number") throw new ToolError("page is a number from 1.");
  return { handle: a.handle, request: { page: a.page } };
}

export function createReadSpillTool({ store, maxBytes }: { store: SpillStore; maxBytes: number }): Tool {
  return {
    schema: {
      name: READ_SPILL_TOOL,
      description: [
        "Reads part of a tool result that was too large to show (its preview ends with a spill:// handle).",
        `Give the handle and exactly one of: range {start, end} in UTF-8 bytes, end exclusive (widened to whole characters; the reply states the actual range);`,
        'jsonPath — $, .key, ["key"], [n] (negative from the end), [a:b] (end exclusive), [*] or .*, e.g. $.items[3:6] or $[0:20].id;',
        `or page (from 1). A reply holds at most ${maxBytes} bytes and says how to continue.`,
      ].join(" "),
      parameters: {
        type: "object",
        properties: {
          handle: { type: "string", description: "spill://<agent>/<conversation>/<toolCallId>" },
          range: {
            type: "object",
            properties: { start: { type: "integer", minimum: 0 }, end: { type: "integer", minimum: 1 } },
            required: ["start", "end"],
          },
          jsonPath: { type: "string" },
          page: { type: "integer", minimum: 1 },
        },
        required: ["handle"],
      },
    },
    async execute(args, context) {
      const { handle, request } = parseArgs(args);
      const spill = await store.find(handle);
      if (!spill || spill.conversationId !== context.run.conversationId) {
        throw new ToolError(`There is no spilled result with handle ${handle} in this conversation; copy the handle from the result's note.`);
      }
      if (spill.releasedAt) {
        throw new ToolError(`The handle ${handle} was released when its run ended; the whole result stays in the conversation log.`);
      }
      // Slices of the result as stored; what escapes storage needed is undone (stored-text.ts).
      return fromStored(await readBack(store, spill, request, maxBytes));
    },
  };
}
