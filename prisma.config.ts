// Prisma CLI configuration. Only the CLI reads this file (generate, migrate diff);
// the server opens its own database in src/db/ and applies migrations with src/db/migrate.ts.
// The JavaScript schema engine needs no downloaded binary; an in-memory PGlite serves as
// the scratch database that `migrate diff --from-migrations` replays migrations into.
import { PGlite } from "@electric-sql/pglite";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { defineConfig } from "prisma/config";

export default defineConfig({
  experimental: { adapter: true },
  schema: "prisma/schema.prisma",
  engine: "js",
  adapter: async () => new PrismaPGlite(new PGlite()),
});
