// An attempt's trace written behind its work (src/trace/record/write-behind.ts): one writer, in
// the order the records were made, events next to each other in one write, and a failed write
// stops everything after it — nothing written out of order, nothing dropped without a failure.
import { describe, expect, it } from "vitest";
import { type QueuedRecord, WriteBehind } from "../../src/trace/record/write-behind.js";

type Event = QueuedRecord & { name: string };

/** A writer whose writes each take a turn of the event loop, logging what they wrote. */
function writer(failOn?: string) {
  const written: string[][] = [];
  const pipeline = new WriteBehind<Event>(async (batch) => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    if (batch.some((event) => event.name === failOn)) throw new Error(`writing ${failOn} failed`);
    written.push(batch.map((event) => event.name));
    batch.forEach((event, index) => event.resolve(index + 1));
  });
  const write = (name: string) => {
    pipeline.detach(async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (name === failOn) throw new Error(`writing ${failOn} failed`);
      written.push([name]);
    });
  };
  const event = (name: string) => new Promise<number>((resolve, reject) => pipeline.record({ name, payload: name, resolve, reject }));
  return { pipeline, written, write, event };
}

describe("a trace written behind the work", () => {
  it("writes in the order records were made, the events between two writes together, and `flushed` waits for all of them", async () => {
    const { pipeline, written, write, event } = writer();
    write("start turn");
    const events = [event("budget"), event("thinking 1"), event("thinking 2")];
    write("end turn");
    void event("reply");
    await pipeline.flushed();
    expect(written).toEqual([["start turn"], ["budget", "thinking 1", "thinking 2"], ["end turn"], ["reply"]]);
    expect(await Promise.all(events)).toEqual([1, 2, 3]);
  });

  it("records made one after the other, each a step of the work later, go in one write: the first is not written alone", async () => {
    const { pipeline, written, event } = writer();
    const records = (async () => {
      const first = event("end tool");
      await Promise.resolve();
      const second = event("end turn");
      await Promise.resolve();
      return [first, second, event("start next turn")];
    })();
    const seqs = await records;
    await pipeline.flushed();
    expect(written).toEqual([["end tool", "end turn", "start next turn"]]);
    expect(await Promise.all(seqs)).toEqual([1, 2, 3]);
  });

  it("a failed write stops the writer: nothing after it is written, `flushed` and the next record fail with it", async () => {
    const { pipeline, written, write, event } = writer("end turn");
    write("start turn");
    write("end turn");
    const after = event("reply");
    write("start next turn");
    await expect(pipeline.flushed()).rejects.toThrow("writing end turn failed");
    await expect(after).rejects.toThrow("writing end turn failed");
    expect(written).toEqual([["start turn"]]);
    expect(() => write("another")).toThrow("writing end turn failed");
    await expect(pipeline.enqueue(async () => "charged")).rejects.toThrow("writing end turn failed");
  });

  it("a write waited for resolves with its value once everything before it is written", async () => {
    const { pipeline, written, write } = writer();
    write("start call");
    const charged = pipeline.enqueue(async () => {
      written.push(["end call, charged"]);
      return "owner";
    });
    write("start next");
    expect(await charged).toBe("owner");
    expect(written).toEqual([["start call"], ["end call, charged"]]);
    await pipeline.flushed();
    expect(written.at(-1)).toEqual(["start next"]);
  });

  it("a write that carries records is handed those queued right before it, in its one write; without any it holds nothing up", async () => {
    const { pipeline, written, event, write } = writer();
    const made = [event("start tool"), event("tool input")];
    const logged = pipeline.carry(async (records) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      written.push(["result", ...records.map((record) => record.name)]);
      records.forEach((record, index) => record.resolve(10 + index));
      return "entry";
    });
    expect(await logged).toBe("entry");
    expect(await Promise.all(made)).toEqual([10, 11]);
    // Nothing queued before it: it goes at once, and what follows is not kept waiting for it.
    let release: () => void = () => undefined;
    const slow = pipeline.carry(async (records) => {
      await new Promise<void>((resolve) => (release = resolve));
      written.push(["second result", ...records.map((record) => record.name)]);
    });
    write("end tool");
    await pipeline.flushed();
    release();
    await slow;
    expect(written).toEqual([["result", "start tool", "tool input"], ["end tool"], ["second result"]]);
  });

  it("a failed write that carried records stops the writer: they fail with it, and so does what follows", async () => {
    const { pipeline, event } = writer();
    const made = event("start tool");
    const logged = pipeline.carry(async () => {
      throw new Error("the result's statement failed");
    });
    await expect(logged).rejects.toThrow("the result's statement failed");
    await expect(made).rejects.toThrow("the result's statement failed");
    await expect(pipeline.flushed()).rejects.toThrow("the result's statement failed");
  });
});
