// The first minutes on a fresh clone: every npm script works with only Node.js installed, and
// installing prints no warning. What npm checks is read from the files it reads: package.json's
// scripts, and package-lock.json's packages with their `engines` and install scripts.
import { readFileSync } from "node:fs";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { projectRoot } from "./support/processes.js";

type Manifest = { engines: { node: string }; scripts: Record<string, string>; allowScripts?: Record<string, boolean> };
type LockedPackage = { name?: string; version?: string; engines?: { node?: string } | string[]; hasInstallScript?: boolean; link?: boolean };

const manifest = JSON.parse(readFileSync(`${projectRoot}/package.json`, "utf8")) as Manifest;
const locked = (JSON.parse(readFileSync(`${projectRoot}/package-lock.json`, "utf8")) as { packages: Record<string, LockedPackage> }).packages;

/** A package's name from its lockfile key ("node_modules/a/node_modules/@b/c" → "@b/c"). */
const nameOf = (key: string, entry: LockedPackage) => entry.name ?? key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length);

const SETUP = /^node scripts\/ensure-setup\.mjs(?: (install|client|build))? && (.+)$/;
const LEVELS = ["install", "client", "build"] as const;
type Level = (typeof LEVELS)[number];

/**
 * What a command needs from the setup step: the bundles in dist/ ("build"); the Prisma client,
 * for anything that loads or checks src/ ("client"); otherwise installed packages ("install").
 */
function levelNeeded(command: string): Level {
  if (/\bdist\//.test(command)) return "build";
  if (/\b(tsx|vitest|depcruise|tsc --noEmit)\b|scripts\/build\.mjs/.test(command)) return "client";
  return "install";
}

describe("npm install on Node.js 20", () => {
  it("installs only packages whose engines accept the lowest Node.js version package.json allows", () => {
    const lowest = semver.minVersion(manifest.engines.node)!.version;
    expect(lowest).toBe("20.19.0");
    const refused = Object.entries(locked)
      .filter(([key, entry]) => key !== "" && !entry.link)
      .flatMap(([key, entry]) => {
        const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
        return range && !semver.satisfies(lowest, range) ? [`${nameOf(key, entry)}@${entry.version} wants node ${range}`] : [];
      });
    expect(refused, "these would print EBADENGINE on a fresh `npm ci`").toEqual([]);
  });

  it("decides every dependency's install script in allowScripts, so npm lists none as unreviewed", () => {
    const withScripts = new Set(
      Object.entries(locked)
        .filter(([, entry]) => entry.hasInstallScript)
        .map(([key, entry]) => nameOf(key, entry)),
    );
    // prisma-migrations is an alias of prisma: npm matches it by the package's real name.
    withScripts.delete("prisma-migrations");
    expect([...withScripts].filter((name) => manifest.allowScripts?.[name] === undefined)).toEqual([]);
    // Denied, all of them: each only fetches or checks native engines Dossier does not use.
    expect(Object.values(manifest.allowScripts ?? {}).every((allowed) => allowed === false)).toBe(true);
  });
});

describe("npm scripts on a fresh clone", () => {
  it.each(Object.entries(manifest.scripts))("%s runs the setup step it needs before anything installed", (_name, script) => {
    const composed = script.split(" && ");
    if (composed.every((part) => /^npm run [\w:-]+$/.test(part))) {
      // Only other scripts, each checked on its own.
      for (const part of composed) expect(Object.keys(manifest.scripts)).toContain(part.slice("npm run ".length));
      return;
    }
    const match = SETUP.exec(script);
    expect(match, `${script} must begin with node scripts/ensure-setup.mjs`).not.toBeNull();
    const level = (match![1] ?? "build") as Level;
    const needed = match![2]!.split(" && ").map(levelNeeded);
    for (const need of needed) expect(LEVELS.indexOf(level), `${script} needs ensure-setup ${need}`).toBeGreaterThanOrEqual(LEVELS.indexOf(need));
  });
});
