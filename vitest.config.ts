import { createRequire } from "node:module";
import { defineConfig } from "vitest/config";

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql@16 has no "exports" map: Node loads its CommonJS build for every dependency,
    // while Vite would pick the "module" (ESM) build for our sources. Two copies of graphql
    // cannot share a schema, so our sources get the same build as everything else.
    alias: [{ find: /^graphql$/, replacement: require.resolve("graphql") }],
  },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
