// Runs a test script in user, mount and network namespaces of its own: only loopback, and a
// resolv.conf naming 127.0.0.1 (where hanging-name-server.ts listens), each name server asked once
// for two seconds by the system's lookup. Needs a machine that lets an unprivileged process make
// these namespaces (namespacesAllowed).
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { projectRoot } from "./processes.js";

const run = promisify(execFile);

/** Whether this machine lets an unprivileged process make user, mount and network namespaces. */
export async function namespacesAllowed(): Promise<boolean> {
  try {
    await run("unshare", ["--user", "--map-root-user", "--mount", "--net", "true"]);
    return true;
  } catch {
    return false;
  }
}

/**
 * The last line `script` (a path under the project, run with tsx) writes, parsed as JSON. `setup`:
 * shell commands run as the namespace's root before it (e.g. `ip addr add ...`).
 */
export async function inNetworkNamespace<T>(script: string, args: readonly string[], setup: readonly string[] = []): Promise<T> {
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-dns-"));
  writeFileSync(path.join(dir, "resolv.conf"), "nameserver 127.0.0.1\noptions timeout:2 attempts:1\n");
  const command = [
    "ip link set lo up",
    `mount --bind ${path.join(dir, "resolv.conf")} /etc/resolv.conf`,
    ...setup,
    `exec "${process.execPath}" --import tsx ${script} ${args.join(" ")}`,
  ].join(" && ");
  const { stdout } = await run("unshare", ["--user", "--map-root-user", "--mount", "--net", "sh", "-c", command], {
    cwd: projectRoot,
    timeout: 80_000,
  }).finally(() => rmSync(dir, { recursive: true, force: true }));
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as T;
}
