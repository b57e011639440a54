// A SpillStore over results held in memory, for tests of read-back without a database. It
// slices bytes and items the way the database store does: by UTF-8 bytes and character offsets.
import type { NewSpill, SpillInfo, SpillStore } from "../../src/runtime/ports/spill-store.js";
import { trimSeparator, utf16Offsets } from "../../src/runtime/spill/json-list-index.js";

type Entry = { info: SpillInfo; content: string; itemStarts: number[]; listEnd: number | null };

export class InMemorySpillStore implements SpillStore {
  private readonly entries = new Map<string, Entry>();

  /** Stores `content` spilled as `spill`, for run `runId` of `conversationId`. */
  add(spill: NewSpill, content: string, { runId = "run-1", conversationId = "conversation-1" } = {}): SpillInfo {
    const { list, ...rest } = spill;
    const info: SpillInfo = {
      ...rest,
      id: `spill-${this.entries.size + 1}`,
      runId,
      conversationId,
      messageId: `message-${this.entries.size + 1}`,
      toolCallId: spill.handle.split("/").at(-1)!,
      list: list ? { path: list.path, itemCount: list.itemStarts.length } : null,
      createdAt: new Date(),
      releasedAt: null,
    };
    this.entries.set(spill.handle, { info, content, itemStarts: list?.itemStarts ?? [], listEnd: list?.listEnd ?? null });
    return info;
  }

  async find(handle: string): Promise<SpillInfo | null> {
    return this.entries.get(handle)?.info ?? null;
  }

  async live(runId: string): Promise<SpillInfo[]> {
    return [...this.entries.values()].filter((e) => e.info.runId === runId && !e.info.releasedAt).map((e) => e.info);
  }

  async readBytes(spill: SpillInfo, start: number, end: number): Promise<Uint8Array> {
    return new Uint8Array(Buffer.from(this.entry(spill).content, "utf8").subarray(start, end));
  }

  async readItems(spill: SpillInfo, from: number, to: number): Promise<string[]> {
    const { content, itemStarts, listEnd } = this.entry(spill);
    const bounds = utf16Offsets(content, [...itemStarts.slice(from, to), itemStarts[to] ?? listEnd!]);
    return bounds.slice(0, -1).map((start, k) => trimSeparator(content.slice(start, bounds[k + 1])));
  }

  async readWhole(spill: SpillInfo): Promise<string> {
    return this.entry(spill).content;
  }

  async releaseRun(runId: string): Promise<number> {
    const live = await this.live(runId);
    for (const info of live) {
      info.releasedAt = new Date();
      info.list = null;
    }
    return live.length;
  }

  async sweep(): Promise<number> {
    return 0;
  }

  private entry(spill: SpillInfo): Entry {
    const entry = this.entries.get(spill.handle);
    if (!entry) throw new Error(`unknown spill ${spill.handle}`);
    return entry;
  }
}
