// The payload step's decision (R10): whether a tool result is spilled and what the model sees
// instead — a preview (first characters, or whole leading items of a JSON list), a note, and
// the read-back handle. Pure computation; nothing here touches storage.
import { createHash } from "node:crypto";
import type { SpillPolicy } from "./spill-policy.js";
import type { NewSpill, SpillStrategy } from "../ports/spill-store.js";
import { indexJsonList, itemText } from "./json-list-index.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";
import { head } from "../../domain/text/whole-characters.js";

/** The longest call id a handle holds as it is; a longer one is shortened to a prefix and its hash. */
export const HANDLE_CALL_ID_CHARS = 64;

/**
 * The handle format of R10, spill://<agent>/<conversation>/<toolCallId>: the tool call id makes it
 * unique within a conversation. Handles are unique (a B-tree index), and a model's
 * call id can be of any length: a long one is held as its first characters and a hash of the whole.
 */
export const spillHandle = (agent: string, conversationId: string, toolCallId: string) => {
  const id =
    toolCallId.length <= HANDLE_CALL_ID_CHARS
      ? toolCallId
      : `${[...toolCallId].slice(0, 32).join("")}~${createHash("sha256").update(toolCallId, "utf8").digest("hex").slice(0, 24)}`;
  return `spill://${agent}/${conversationId}/${id}`;
};

/** The spill of `output`, or null when the policy keeps it inline. */
export function planSpill(input: { output: string; toolName: string; handle: string; policy: SpillPolicy }): NewSpill | null {
  const { output, policy } = input;
  if (!policy.enabled || output.length <= policy.thresholdChars) return null;
  const sizeBytes = Buffer.byteLength(output, "utf8");
  const sizeChars = countCodePoints(output);
  const index = policy.strategy === "head" ? null : indexJsonList(output);
  const base = { handle: input.handle, toolName: input.toolName, sizeBytes, sizeChars };
  const list = index ? { path: index.path, itemStarts: index.startsCp, listEnd: index.endCp } : null;
  if (index) {
    const items: string[] = [];
    let length = 2;
    for (let k = 0; k < index.starts16.length; k += 1) {
      const item = itemText(output, index.starts16, index.end16, k);
      if (length + item.length + (items.length > 0 ? 1 : 0) > policy.previewChars) break;
      length += item.length + (items.length > 0 ? 1 : 0);
      items.push(item);
    }
    if (items.length > 0) return { ...base, strategy: "json-items", preview: `[${items.join(",")}]`, previewItems: items.length, list };
  }
  return { ...base, strategy: "head", preview: head(output, policy.previewChars), previewItems: null, list };
}

/** What the model sees of a spilled result (in the log read path and on the trace). */
export function renderSpilled(spill: {
  handle: string;
  toolName: string;
  sizeBytes: number;
  sizeChars: number;
  preview: string;
  strategy: SpillStrategy | string;
  previewItems: number | null;
  listPath: string | null;
  itemCount: number | null;
  released: boolean;
}): string {
  const shown =
    spill.strategy === "json-items" && spill.previewItems !== null && spill.itemCount !== null
      ? `the first ${spill.previewItems} of ${spill.itemCount} items of the JSON list at ${spill.listPath}`
      : `the first ${count(countCodePoints(spill.preview))} of ${count(spill.sizeChars)} characters`;
  const reads = [
    'a byte range {"range":{"start":0,"end":16384}}',
    spill.listPath !== null ? `a JSON path such as {"jsonPath":"${spill.listPath}[10:20]"}` : 'a JSON path {"jsonPath":"$.key[0]"}',
    'a page {"page":2}',
  ];
  const how = spill.released
    ? `Its read-back handle ${spill.handle} was released when its run ended; the whole result stays in the conversation log.`
    : `Read more with read_spill {"handle":"${spill.handle}", …} and ${reads.join(", ")}.`;
  return `${spill.preview}\n\n[Spilled result of ${spill.toolName}: ${count(spill.sizeBytes)} bytes, too large for the context. Shown above: ${shown}. ${how}]`;
}

const count = groupedDigits;

export function countCodePoints(text: string): number {
  let lows = 0;
  if (/[\uDC00-\uDFFF]/.test(text)) for (let i = 0; i < text.length; i += 1) if ((text.charCodeAt(i) & 0xfc00) === 0xdc00) lows += 1;
  return text.length - lows;
}
