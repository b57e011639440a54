// Prisma CLI configuration. Only the CLI reads this file (generate, migrate diff); the server
// opens its own database in src/db/ and applies migrations with src/db/migrate.ts.
//
// The JavaScript schema engine needs no downloaded binary. Its databases are in-memory PGlites.
// `migrate diff --from-migrations` replays each migration.sql into a shadow database through
// executeRaw without parameters; PGlite runs a multi-statement script only through exec(), so
// the shadow adapter routes such calls there.
import { PGlite } from "@electric-sql/pglite";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { defineConfig } from "prisma/config";

class ScriptablePGlite extends PrismaPGlite {
  override async connectToShadowDb() {
    const shadow = new PGlite();
    const adapter = await new PrismaPGlite(shadow).connect();
    const executeRaw = adapter.executeRaw.bind(adapter);
    adapter.executeRaw = async (query) => {
      if (query.args.length > 0) return executeRaw(query);
      await shadow.exec(query.sql);
      return 0;
    };
    return adapter;
  }
}

export default defineConfig({
  experimental: { adapter: true },
  schema: "prisma/schema.prisma",
  engine: "js",
  adapter: async () => new ScriptablePGlite(new PGlite()),
});
