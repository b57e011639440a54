// S1, S5: the server as a process — embedded data folder lock, restart after a crash,
// configuration errors that stop the start with a clear message.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../../sdk/client.js";
import { CreateWorkspaceDocument, WorkspacesDocument } from "../../sdk/generated/graphql.js";
import { fillMigratedDataFolder } from "../support/databases.js";
import { killAll, type Spawned, spawnBuilt } from "../support/processes.js";

const running: Spawned[] = [];
const folders: string[] = [];
afterEach(async () => {
  await killAll(running);
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function startServer(env: Record<string, string>): Spawned {
  const p = spawnBuilt("src/main.ts", { env: { PORT: "0", ...env } });
  running.push(p);
  return p;
}

async function urlOf(p: Spawned): Promise<string> {
  const line = await p.waitForOutput(/"url":"[^"]+"/);
  return JSON.parse(`{${line}}`).url as string;
}

function dataDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-data-"));
  folders.push(dir);
  return dir;
}

describe("the embedded database folder", () => {
  it("stops a second process on the same folder with a clear message, and survives a killed server", async () => {
    const DATA_DIR = dataDir();
    const first = startServer({ DATA_DIR });
    const url = await urlOf(first);
    const client = createClient({ url });
    await client.request(CreateWorkspaceDocument, { input: { title: "Survives a crash", goal: "g" } });

    const second = startServer({ DATA_DIR });
    const { code } = await second.exited;
    expect(code).toBe(1);
    expect(second.output()).toContain(`The embedded database in ${DATA_DIR} is in use by another Dossier process (pid`);
    expect(second.output()).toContain("PGlite allows one process per data folder");

    // The first server is unharmed by the refused second one.
    expect((await client.request(WorkspacesDocument, {})).workspaces.edges).toHaveLength(1);

    // A crash leaves the lock behind; the next start takes it over and finds the data.
    first.child.kill("SIGKILL");
    await first.exited;
    const restarted = startServer({ DATA_DIR });
    const again = createClient({ url: await urlOf(restarted) });
    const listed = await again.request(WorkspacesDocument, {});
    expect(listed.workspaces.edges.map((e) => e.node.title)).toEqual(["Survives a crash"]);
  });

  it("releases the folder on a graceful shutdown", async () => {
    // A folder a server has already used (the first start on a new one is the test above).
    const DATA_DIR = dataDir();
    await fillMigratedDataFolder(DATA_DIR);
    const first = startServer({ DATA_DIR });
    await urlOf(first);
    first.child.kill("SIGTERM");
    expect((await first.exited).code).toBe(0);
    const second = startServer({ DATA_DIR });
    await urlOf(second);
  });
});

describe("configuration", () => {
  it("refuses to start on bad values, naming each of them", async () => {
    const p = startServer({ PORT: "eighty", DATABASE_URL: "mysql://db/x", LOG_LEVEL: "loud", DATA_DIR: dataDir() });
    const { code } = await p.exited;
    expect(code).toBe(1);
    const output = p.output();
    expect(output).toContain("Invalid configuration");
    expect(output).toMatch(/PORT="eighty": must be a number/);
    expect(output).toMatch(/DATABASE_URL="mysql:\/\/db\/x": must be a PostgreSQL URL/);
    expect(output).toMatch(/LOG_LEVEL="loud"/);
    expect(output).not.toContain("    at "); // a message, not a stack trace
  });
});

describe("the commands that start Dossier's processes", () => {
  it("run the bundles in dist/ with the Node.js flags and environment Dossier is measured with, after the setup step", async () => {
    const { readFileSync } = await import("node:fs");
    const { nodeCommand, PROCESSES } = await import("../../scripts/build.mjs");
    const scripts = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { scripts: Record<string, string> }).scripts;
    const bundles = PROCESSES.map((entry) => `dist/${entry.replace(/\.ts$/, ".js")}`);
    expect([scripts.start, scripts.worker, scripts.mcp]).toEqual(bundles.map((bundle) => `node scripts/ensure-setup.mjs && ${nodeCommand(bundle)}`));
  });
});

describe("a port already in use", () => {
  it("ends start-up with one line naming the port, and no stack trace", async () => {
    const { createServer } = await import("node:net");
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      // A folder a server has already used: the start reaches the port without initialising a database first.
      const DATA_DIR = dataDir();
      await fillMigratedDataFolder(DATA_DIR);
      const p = startServer({ PORT: String(port), DATA_DIR });
      let stderr = "";
      p.child.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString("utf8");
      });
      const { code } = await p.exited;
      expect(code).toBe(1);
      // Structured log lines (JSON) may precede it; everything else is the one line.
      const plain = stderr.split("\n").filter((line) => line !== "" && !line.startsWith("{"));
      expect(plain).toEqual([`Dossier could not start: port ${port} is in use (another server?); stop it or set PORT.`]);
      expect(stderr).not.toContain("    at ");
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });
});
