// Every outbound request of a principal — an HTTP MCP server's connection, a webhook delivery, an
// http_fetch call — resolves its names under that principal's own bound on lookups in flight
// (src/outbound/name-lookup.ts): one principal whose names never answer holds back no other's,
// and two principals fetching one host each wait for their own lookups only.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MCP_SERVERS_PER_PRINCIPAL_MAX } from "../../src/domain/capabilities/mcp-server-service.js";
import { NAMES_IN_FLIGHT_PER_PRINCIPAL } from "../../src/outbound/name-lookup.js";
import { fillMigratedDataFolder } from "../support/databases.js";
import { inNetworkNamespace, namespacesAllowed } from "../support/network-namespace.js";
import { OK_TEST_ADDRESS } from "../support/hanging-name-server.js";

const SCRIPT = "test/support/principal-lookups-process.ts";

describe.skipIf(!(await namespacesAllowed()))("a principal's names are its own", () => {
  it("another principal's MCP servers at names that never answer do not hold back its MCP server's connection", async () => {
    // B's status is read within 5 s; a lookup nobody answers takes about 7 s here.
    const dataDir = mkdtempSync(path.join(tmpdir(), "dossier-data-"));
    await fillMigratedDataFolder(dataDir);
    const probe = await inNetworkNamespace<{
      hangingNamesAsked: number;
      bStatus: { name: string; state: string; tools: string[] }[] | null;
      aStates: string[];
      aTools: string[];
    }>(SCRIPT, ["mcp", dataDir, "5000"], [`ip addr add ${OK_TEST_ADDRESS}/32 dev lo`]).finally(() => rmSync(dataDir, { recursive: true, force: true }));

    expect(probe.bStatus).toEqual([{ name: "notes", state: "CONNECTED", tools: ["echo"] }]);
    expect(probe.aStates).toEqual(["FAILED"]);
    expect(probe.aTools).toEqual([]);
    expect(probe.hangingNamesAsked).toBe(MCP_SERVERS_PER_PRINCIPAL_MAX);
  }, 90_000);

  it("two principals fetching one host whose name never answers each wait for their own lookups", async () => {
    // P1 is at its bound when both ask for shared.hang.test: P2's lookup is asked at once and fails
    // as a name without an answer does (about 7 s); P1's waits for one of P1's own lookups to end
    // first, and its connection gives up at its 10 s limit before an answer could come.
    const probe = await inNetworkNamespace<{ askedAtOnce: number; sharedAskedAtOnce: boolean; p1: string; p2: string }>(SCRIPT, ["fetch", "20000"]);

    expect(probe.sharedAskedAtOnce).toBe(true);
    expect(probe.askedAtOnce).toBe(NAMES_IN_FLIGHT_PER_PRINCIPAL + 1);
    expect(probe.p2).toBe("fetching http://shared.hang.test/ failed: the connection failed (EAI_AGAIN)");
    expect(probe.p1).toBe("fetching http://shared.hang.test/ failed: the connection failed (UND_ERR_CONNECT_TIMEOUT)");
  }, 90_000);
});
