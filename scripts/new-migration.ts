// Authors the next SQL migration from the difference between the migrations already in
// prisma/migrations and prisma/schema.prisma: `npm run migration:new -- <name>`.
// The SQL is written with LF line endings so its checksum is stable on every machine.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error("usage: npm run migration:new -- <name>   (lower-case letters, digits and _)");
  process.exit(2);
}

const migrationsDir = path.resolve("prisma/migrations");
const hasMigrations =
  existsSync(migrationsDir) && readdirSync(migrationsDir).some((entry) => /^\d{14}_/.test(entry));
const from = hasMigrations ? ["--from-migrations", migrationsDir] : ["--from-empty"];

const sql = execFileSync(
  "npx",
  ["prisma", "migrate", "diff", ...from, "--to-schema-datamodel", "prisma/schema.prisma", "--script"],
  { encoding: "utf8", env: { ...process.env, DATABASE_URL: process.env.DATABASE_URL ?? "postgresql://placeholder" } },
)
  .split("\n")
  .filter((line) => !line.startsWith("Loaded Prisma config"))
  .join("\n")
  .trim();

if (sql === "" || sql === "-- This is an empty migration.") {
  console.log("prisma/schema.prisma matches the migrations: nothing to write.");
  process.exit(0);
}

const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
const dir = path.join(migrationsDir, `${stamp}_${name}`);
mkdirSync(dir, { recursive: true });
writeFileSync(path.join(dir, "migration.sql"), `${sql}\n`);
console.log(`wrote ${path.relative(process.cwd(), dir)}/migration.sql`);
