// A write past the whole server's sandbox budget (SANDBOX_MAX_BYTES_TOTAL) is refused with what
// the model can act on: the space is full, how many bytes the write would add, and what its own
// principal's runs hold; never what the other principals' runs hold, nor the total they make.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SandboxLedger } from "../../src/runtime/tools/sandbox-ledger.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A ledger of runs still under way, each owned as `owners` says, on an empty folder. */
function ledger(owners: Record<string, string>): SandboxLedger {
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-sandbox-total-"));
  dirs.push(dir);
  return new SandboxLedger({
    dir,
    budgets: { perPrincipal: 3000, total: 4000 },
    runs: async (ids) => ids.filter((id) => owners[id]).map((id) => ({ id, ownerId: owners[id]!, endedAt: null })),
  });
}

const refusal = (write: Promise<void>) => write.then(String, (error: Error) => error.message);
/** Every number a message names. */
const figures = (message: string) => message.match(/\d+/g) ?? [];

describe("the sandbox total's refusal", () => {
  it("tells a principal holding nothing that the space is full and to try later, naming only the write's size", async () => {
    const sandboxes = ledger({ aliceRun: "alice", bobRun: "bob" });
    await sandboxes.reserve("aliceRun", "alice", 2987, "a.bin");
    const refused = await refusal(sandboxes.reserve("bobRun", "bob", 1500, "notes.txt"));
    expect(refused).toBe(
      "The sandbox space on this server is full: the 1500 bytes writing notes.txt would add do not fit. " +
        "This run's owner's runs hold none of it, so there is nothing of theirs to free: try again later, or ask the server's operator for room.",
    );
    expect(figures(refused)).toEqual(["1500"]);
    expect(sandboxes.bytesOf("bob")).toBe(0);
  });

  it("tells a principal holding some of it how much it holds, and to overwrite what it no longer needs", async () => {
    const sandboxes = ledger({ aliceRun: "alice", bobRun: "bob" });
    await sandboxes.reserve("aliceRun", "alice", 2987, "a.bin");
    await sandboxes.reserve("bobRun", "bob", 900, "b.bin");
    const refused = await refusal(sandboxes.reserve("bobRun", "bob", 500, "notes.txt"));
    expect(refused).toBe(
      "The sandbox space on this server is full: the 500 bytes writing notes.txt would add do not fit. " +
        "This run's owner's runs hold 900 bytes of it: overwrite files you no longer need with shorter ones, or try again later.",
    );
    expect(figures(refused)).toEqual(["500", "900"]);
  });

  it("tells a program stopped past the total the same: the space is full and what its own principal's runs hold", async () => {
    const sandboxes = ledger({ aliceRun: "alice", bobRun: "bob" });
    // Counted on disk after the programs wrote: past the total, as no write through the ledger could be.
    sandboxes.counted("aliceRun", "alice", 2987);
    sandboxes.counted("bobRun", "bob", 1500);
    const why = sandboxes.past("bob")!;
    expect(why).toBe("the sandbox space on this server is full, and this run's owner's runs held 1500 bytes of it");
    expect(figures(why)).toEqual(["1500"]);
  });
});
