// Runs before `npm start` and `npm test` so both work on a fresh clone with only Node.js:
// installs dependencies when package-lock.json is newer than node_modules, and generates the
// Prisma client when prisma/schema.prisma is newer than it. Uses Node built-ins only.
import { execSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";

const mtime = (path) => (existsSync(path) ? statSync(path).mtimeMs : 0);
const run = (command) => execSync(command, { stdio: "inherit" });

const installed = mtime("node_modules/.package-lock.json");
if (installed === 0 || mtime("package-lock.json") > installed || mtime("package.json") > installed) {
  console.error("Installing dependencies (npm ci)…");
  run(existsSync("package-lock.json") ? "npm ci --no-audit --no-fund" : "npm install --no-audit --no-fund");
}

if (mtime("src/generated/prisma/client.ts") < mtime("prisma/schema.prisma")) {
  console.error("Generating the Prisma client…");
  run("npm run --silent generate:prisma");
}
