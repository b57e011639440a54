// Prisma CLI configuration, read by `npm run generate:prisma` only. The server opens its own
// database in src/db/ and applies migrations with src/db/migrate.ts; migrations are authored with
// `npm run migration:new` (scripts/new-migration.ts), which runs its own CLI and configuration
// (scripts/migrations/).
import { defineConfig } from "prisma/config";

export default defineConfig({
  schema: "prisma/schema.prisma",
});
