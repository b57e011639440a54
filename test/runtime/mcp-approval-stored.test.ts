// An MCP server's requireApproval holds a run's calls as it is stored, not as the worker last heard
// over `mcp:changed`: turned on while a run goes on, written straight to the database (no event
// reaches the worker, as when Redis is down or the message is lost), the run's next call of the
// server's tools waits for a person and the server sees no call. A server removed or turned off
// meanwhile runs none of its calls, and nobody is asked about them. Each step that calls an MCP
// tool reads its servers' flags in one statement, by primary key; so does a resumed step whose
// calls were approved, before they run.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { DecideToolCallDocument, RunApprovalsDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import type { ModelPort } from "../../src/runtime/ports/model.js";
import { openMigratedTestDatabase } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-test-server.ts");
/** The test server's tool `delete.cache` (variant "names", which logs each call), as the model calls it. */
const TOOL = "mcp__ops__delete_cache";
/** The statement a step sends to read its MCP servers' flags: by primary key. */
const FLAGS_READ = /FROM "public"\."mcp_server" AS "t0" WHERE "t0"\."id" IN/;

/** toolCallingModel whose second request (the run's second turn) waits until released. */
function secondTurnHeld() {
  const scripted = toolCallingModel("mcp");
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let waiting = false;
  const model: ModelPort = {
    label: scripted.label,
    model: scripted.model,
    scripted: true,
    contextWindow: scripted.contextWindow,
    async complete(request, onEvent) {
      if (scripted.stepsTaken === 1) {
        waiting = true;
        await released;
      }
      return scripted.complete(request, onEvent);
    },
  };
  return { model, release, waiting: () => waiting };
}

describe("an MCP server's requireApproval as stored", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  let logFile = "";
  const statements: string[] = [];
  /** The calls the server executed, from its log. */
  const executed = () => (existsSync(logFile) ? readFileSync(logFile, "utf8").split("\n") : []).filter((line) => line.startsWith("call "));

  /** An app whose model holds the run's second turn, with the server `ops` stored (requireApproval off); a run calling TOOL in two turns, its first turn's call run. */
  async function runHeldAtSecondTurn(): Promise<{ client: DossierClient; runId: string; release: () => void }> {
    statements.length = 0;
    logFile = path.join(mkdtempSync(path.join(tmpdir(), "dossier-mcp-stored-")), "servers.log");
    const held = secondTurnHeld();
    t = await startTestApp("pglite", {
      database: () => openMigratedTestDatabase("pglite", { onQuery: (sql) => statements.push(sql) }),
      mcp: { stdioCommands: [`${process.execPath} --import tsx ${SERVER_SCRIPT} …`], stdioEnv: ["MCP_TEST_LOG"] },
      runtime: { model: held.model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), leaseMs: 5_000, sweepMs: 200 },
    });
    const client = t.client;
    const input = {
      name: "ops",
      transport: "STDIO" as const,
      command: process.execPath,
      args: ["--import", "tsx", SERVER_SCRIPT, "--name", "ops", "--variant", "names"],
      env: [{ name: "MCP_TEST_LOG", value: logFile }],
      requireApproval: false,
    };
    expectType((await client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess");
    const { run } = await admit(client, { question: callToolsInTurns([{ name: TOOL }], [{ name: TOOL }]) });
    await waitUntil(async () => held.waiting() || undefined);
    expect(executed()).toHaveLength(1);
    return { client, runId: run.id, release: held.release };
  }

  /** The run once it has stopped running. */
  async function stopped(client: DossierClient, runId: string) {
    return waitUntil(async () => {
      const current = expectType((await client.request(RunApprovalsDocument, { id: runId })).node!, "Run");
      return ["QUEUED", "RUNNING"].includes(current.status) ? undefined : current;
    });
  }

  it("turned on in the database while a run goes on, unheard by the worker: the run's next call waits, unrun", async () => {
    const { client, runId, release } = await runHeldAtSecondTurn();
    await t!.app.db.prisma.$executeRawUnsafe("UPDATE mcp_server SET require_approval = true");
    release();

    const waiting = await stopped(client, runId);
    expect(waiting.status).toBe("WAITING");
    const pending = waiting.pendingApprovals.edges.map((edge) => edge.node);
    expect(pending.map((approval) => approval.toolName)).toEqual([TOOL]);
    expect(executed()).toHaveLength(1);

    expectType(
      (await client.request(DecideToolCallDocument, { input: { runId, toolCallId: pending[0]!.toolCallId, decision: "APPROVE" } })).decideToolCall,
      "DecideToolCallSuccess",
    );
    expect((await settled(client, runId)).status).toBe("SUCCEEDED");
    expect(executed()).toHaveLength(2);
    // One read of the flags for each of the two steps that called the tool, and one for the resumed step (its approved call's server is still there).
    expect(statements.filter((sql) => FLAGS_READ.test(sql))).toHaveLength(3);
  });

  it.each([
    ["removed", "DELETE FROM mcp_server"],
    ["turned off", "UPDATE mcp_server SET enabled = false"],
  ])("%s in the database while a run goes on, unheard by the worker: the run's next call does not run, and nobody is asked", async (_, change) => {
    const { client, runId, release } = await runHeldAtSecondTurn();
    await t!.app.db.prisma.$executeRawUnsafe(change);
    release();

    const done = await settled(client, runId);
    expect(done.status).toBe("SUCCEEDED");
    const gone = `[not executed: the MCP server "ops" of "${TOOL}" was removed or turned off after this run started; its tools are unavailable to this run.]`;
    expect(done.answer).toBe(`delete.cache done\n---\n${gone}`);
    expect(executed()).toHaveLength(1);
    const requested = done.trace!.spans.flatMap((span) => span.events).filter((event) => event.kind === "APPROVAL_REQUESTED");
    expect(requested).toHaveLength(0);
  });
});
