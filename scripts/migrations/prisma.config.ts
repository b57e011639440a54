// Configuration of the Prisma CLI that authors migrations (`npm run migration:new`): Prisma 6.19's,
// installed as `prisma-migrations`, because its JavaScript schema engine needs no downloaded binary
// and Prisma 7's CLI needs a native one to compute a diff. Its databases are in-memory PGlites.
// `migrate diff --from-migrations` replays each migration.sql into a shadow database through
// executeRaw without parameters; PGlite runs a multi-statement script only through exec(), so
// the shadow adapter routes such calls there.
import { PGlite } from "@electric-sql/pglite";
import { PrismaPGlite } from "pglite-prisma-adapter-migrations";
import { defineConfig } from "prisma-migrations/config";

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
  // The copy of prisma/schema.prisma written by scripts/new-migration.ts in 6.19's dialect.
  schema: process.env.DOSSIER_MIGRATION_SCHEMA,
  experimental: { adapter: true },
  engine: "js",
  adapter: async () => new ScriptablePGlite(new PGlite()),
});
