// A6: `npm run key:create -- --name <name>` creates a principal and prints its first API key,
// run as an operator would: a separate process on the server's data folder.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, DossierRequestError } from "../../sdk/client.js";
import { ViewerDocument } from "../../sdk/generated/graphql.js";
import { hashApiKey } from "../../src/domain/principal/principal-service.js";
import { killAll, type Spawned, spawnBuilt, spawnTs } from "../support/processes.js";

const KEY = /dsk_[A-Za-z0-9_-]+/g;

const running: Spawned[] = [];
const folders: string[] = [];
afterEach(async () => {
  await killAll(running);
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-keys-"));
  folders.push(dir);
  return dir;
}

/** Runs key:create to completion; returns its exit code and everything it printed. */
async function createKey(DATA_DIR: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const p = spawnTs("scripts/create-key.ts", { env: { DATA_DIR }, args });
  running.push(p);
  const { code } = await p.exited;
  return { code, output: p.output() };
}

/** The one key a successful key:create printed. */
function keyIn(output: string): string {
  const keys = new Set(output.match(KEY) ?? []);
  expect(keys.size, `expected exactly one key in:\n${output}`).toBe(1);
  return [...keys][0]!;
}

function startServer(DATA_DIR: string): Spawned {
  const p = spawnBuilt("src/main.ts", { env: { PORT: "0", DATA_DIR, AUTH_REQUIRED: "true" } });
  running.push(p);
  return p;
}

async function urlOf(p: Spawned): Promise<string> {
  const line = await p.waitForOutput(/"url":"[^"]+"/);
  return JSON.parse(`{${line}}`).url as string;
}

async function stop(p: Spawned): Promise<void> {
  p.child.kill("SIGTERM");
  expect((await p.exited).code).toBe(0);
}

const viewerWith = (url: string, key?: string) => createClient({ url, headers: key ? { authorization: `Bearer ${key}` } : {} }).request(ViewerDocument, {});

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

describe("npm run key:create", () => {
  it("prints a new key that the server then accepts, and refuses to run beside a running server", async () => {
    const DATA_DIR = dataDir();
    const created = await createKey(DATA_DIR, ["--name", "Alice"]);
    expect(created.code, created.output).toBe(0);
    expect(created.output).toContain('Principal "Alice"');
    const aliceKey = keyIn(created.output);
    expect(created.output).toContain(`Authorization: Bearer ${aliceKey}`);

    const server = startServer(DATA_DIR);
    const url = await urlOf(server);
    expect((await viewerWith(url, aliceKey)).viewer).toMatchObject({ name: "Alice", apiKeys: { edges: [{ node: { name: "first key" } }], totalCount: 1 } });
    await expect(viewerWith(url)).rejects.toSatisfy(
      (error) => error instanceof DossierRequestError && error.message === "An API key is required: send `Authorization: Bearer <key>`.",
    );
    await expect(viewerWith(url, "dsk_wrong")).rejects.toSatisfy((error) => error instanceof DossierRequestError && error.message === "Invalid API key.");

    // The embedded database is single-process: the script says what to do instead.
    const beside = await createKey(DATA_DIR, ["--name", "Bob"]);
    expect(beside.code).toBe(1);
    expect(beside.output).toContain("stop it and run this again");
    expect(beside.output).toContain("createApiKey");
    expect(beside.output).not.toMatch(KEY);
    expect(beside.output).not.toContain("    at "); // a message, not a stack trace
    // The running server is unharmed.
    expect((await viewerWith(url, aliceKey)).viewer.name).toBe("Alice");

    // Doing as told works: stop the server, create the key, start again; both keys work.
    await stop(server);
    const bob = await createKey(DATA_DIR, ["--name", "Bob"]);
    expect(bob.code, bob.output).toBe(0);
    const bobKey = keyIn(bob.output);
    expect(bobKey).not.toBe(aliceKey);
    expect(bob.output).not.toContain(aliceKey); // a key is shown once, when it is created

    const restarted = startServer(DATA_DIR);
    const again = await urlOf(restarted);
    const bobViewer = (await viewerWith(again, bobKey)).viewer;
    const aliceViewer = (await viewerWith(again, aliceKey)).viewer;
    expect(bobViewer.name).toBe("Bob");
    expect(aliceViewer.name).toBe("Alice");
    expect(bobViewer.id).not.toBe(aliceViewer.id);
    await stop(restarted);

    // Only a hash of each key is stored: no file in the data folder holds a usable key.
    const stored = filesUnder(DATA_DIR).map((file) => ({ file, bytes: readFileSync(file) }));
    expect(stored.some(({ bytes }) => bytes.includes(hashApiKey(aliceKey)))).toBe(true); // the scan sees the keys table
    for (const { file, bytes } of stored) {
      expect(bytes.includes(aliceKey), file).toBe(false);
      expect(bytes.includes(bobKey), file).toBe(false);
    }
  }, 120_000);

  it("stops with a usage line when --name is missing, before touching the data folder", async () => {
    const DATA_DIR = dataDir();
    const missing = await createKey(DATA_DIR, []);
    expect(missing.code).not.toBe(0);
    expect(missing.output).toContain("usage: npm run key:create -- --name <name>");
    expect(missing.output).not.toMatch(KEY);
    expect(readdirSync(DATA_DIR)).toEqual([]);
  });

  it("refuses a blank name with a message and creates no key, before touching the data folder", async () => {
    const DATA_DIR = dataDir();
    const blank = await createKey(DATA_DIR, ["--name", "   "]);
    expect(blank.code).toBe(1);
    expect(blank.output).toContain("name: must not be empty");
    expect(blank.output).not.toMatch(KEY);
    expect(blank.output).not.toContain("    at ");
    expect(readdirSync(DATA_DIR)).toEqual([]);
  });
});
