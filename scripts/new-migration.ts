// Authors the next SQL migration from the difference between the migrations already in
// prisma/migrations and prisma/schema.prisma: `npm run migration:new -- <name>`;
// `npm run migration:new -- --check` writes nothing and fails when the schema has changes no
// migration holds.
// The SQL is written with LF line endings so its checksum is stable on every machine.
//
// The diff is computed by Prisma 6.19's CLI (installed as `prisma-migrations`, configured by
// scripts/migrations/prisma.config.ts): its schema engine is JavaScript, while the client's
// Prisma 7 CLI needs a native schema engine it cannot download here.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const check = process.argv[2] === "--check";
const name = process.argv[2];
if (!check && (!name || !/^[a-z0-9_]+$/.test(name))) {
  console.error("usage: npm run migration:new -- <name>   (lower-case letters, digits and _), or -- --check");
  process.exit(2);
}

const migrationsDir = path.resolve("prisma/migrations");
const hasMigrations = existsSync(migrationsDir) && readdirSync(migrationsDir).some((entry) => /^\d{14}_/.test(entry));
const from = hasMigrations ? ["--from-migrations", migrationsDir] : ["--from-empty"];

const scratch = mkdtempSync(path.join(tmpdir(), "dossier-migration-"));
const schema = path.join(scratch, "schema.prisma");
// 6.19 reads the datasource URL from the schema and needs its engine-free client generator, or it
// downloads engines; the models are prisma/schema.prisma's, unchanged.
const datasource = /(datasource db \{\n\s*provider\s*=\s*"postgresql"\n)/;
const source = readFileSync("prisma/schema.prisma", "utf8");
if (!datasource.test(source)) throw new Error('prisma/schema.prisma: expected `datasource db { provider = "postgresql" }`');
const generator =
  'generator client {\n  provider        = "prisma-client"\n  engineType      = "client"\n  previewFeatures = ["queryCompiler", "driverAdapters"]\n}\n';
writeFileSync(schema, generator + source.replace(/^generator \w+ \{[^}]*\}\n/gm, "").replace(datasource, '$1  url = env("DATABASE_URL")\n'));
const cli = path.resolve("node_modules/prisma-migrations/build/index.js");
let output: string;
try {
  output = execFileSync(
    process.execPath,
    [cli, "migrate", "diff", "--config", "scripts/migrations/prisma.config.ts", ...from, "--to-schema-datamodel", schema, "--script"],
    { encoding: "utf8", env: { ...process.env, DATABASE_URL: "postgresql://placeholder", DOSSIER_MIGRATION_SCHEMA: schema } },
  );
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
const sql = output
  .split("\n")
  .filter((line) => !line.startsWith("Loaded Prisma config"))
  .join("\n")
  .trim();

if (sql === "" || sql === "-- This is an empty migration.") {
  console.log("prisma/schema.prisma matches the migrations: nothing to write.");
  process.exit(0);
}
if (check) {
  console.error(`prisma/schema.prisma has changes no migration holds: run npm run migration:new -- <name>\n${sql}`);
  process.exit(1);
}

const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
const dir = path.join(migrationsDir, `${stamp}_${name}`);
mkdirSync(dir, { recursive: true });
writeFileSync(path.join(dir, "migration.sql"), `${sql}\n`);
console.log(`wrote ${path.relative(process.cwd(), dir)}/migration.sql`);
