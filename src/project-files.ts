// Files Dossier ships beside its code — the migrations, the built-in skills — found from the
// project's root rather than from the importing module, so the same paths hold whether Dossier
// runs from its TypeScript sources (tests, tsx) or from the bundle `npm start` runs (dist/).
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

function findRoot(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json")) && existsSync(path.join(dir, "prisma", "migrations"))) return dir;
    if (path.dirname(dir) === dir)
      throw new Error(`Dossier's project folder (package.json beside prisma/migrations) is not above ${fileURLToPath(import.meta.url)}`);
  }
}

let root: string | undefined;

/** A path inside Dossier's project folder, e.g. projectFile("prisma", "migrations"). */
export function projectFile(...segments: string[]): string {
  root ??= findRoot();
  return path.join(root, ...segments);
}
