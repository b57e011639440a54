// Dossier's layers, checked by `npm run lint` (dependency-cruiser). The domain knows nothing of
// the agent runtime or of GraphQL; the runtime knows nothing of the API that serves it; the GraphQL
// layer sees the runtime only through its ports; vendor SDKs live in adapters, which only the
// composition roots pick. Type-only imports count: they couple modules just the same.

/** Vendor SDKs: each is wrapped by an adapter, so that swapping one touches one folder. */
const VENDOR_SDKS = [
  "openai",
  "@modelcontextprotocol/sdk",
  "pg-boss",
  "ioredis",
  "js-tiktoken",
  "pg",
  "@types/pg",
  "@electric-sql/pglite",
  "pglite-prisma-adapter",
  "@prisma/adapter-pg",
  "@graphql-yoga/redis-event-target",
  "undici",
];
const literally = (name) => name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** Where a vendor SDK may be imported: the adapters and the entry points that choose them. */
const ADAPTERS = [
  "^src/runtime/adapters/",
  "^src/events/redis-(event-target|link-log)\\.ts$",
  "^src/server/redis-token-buckets\\.ts$",
  "^src/db/",
  "^src/mcp/",
  // Webhook delivery (pg-boss) and the outbound HTTP guard (undici): adapters of their own.
  "^src/webhooks/delivery/",
  "^src/outbound/",
  // Composition roots.
  "^src/compose/",
  "^src/(main|worker-main)\\.ts$",
];

/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "A cycle makes both modules one unit: neither can be read, tested or loaded alone.",
      from: { path: "^(src|sdk)/" },
      to: { circular: true },
    },
    {
      name: "metrics-and-runtime-one-way",
      severity: "error",
      comment: "The runtime and the metrics must not import each other: one depends on the other, not both (a folder cycle).",
      scope: "folder",
      from: { path: "^src/metrics$" },
      to: { circular: true, viaOnly: { path: ["^src/metrics$", "^src/runtime$", "^src/runtime/[^/]+$"] } },
    },
    {
      name: "spill-below-tools",
      severity: "error",
      comment: "Tools read spilled results back through the spill store; the store knows nothing of the tools.",
      from: { path: "^src/runtime/spill/" },
      to: { path: "^src/runtime/tools/" },
    },
    {
      name: "domain-is-independent",
      severity: "error",
      comment: "The domain (workspaces, runs, publications) knows nothing of the runtime, the server or the GraphQL API.",
      from: { path: "^src/domain/" },
      to: { path: "^src/(runtime|server|graphql)/" },
    },
    {
      name: "runtime-serves-no-api",
      severity: "error",
      comment: "The agent runtime knows nothing of the GraphQL schema or the HTTP server that expose it.",
      from: { path: "^src/runtime/" },
      to: { path: "^src/(graphql|server)/" },
    },
    {
      name: "configuration-stays-at-the-roots",
      severity: "error",
      comment: "The domain and the runtime take their settings as options: only the composition roots read the configuration.",
      from: { path: "^src/(domain|runtime)/" },
      to: { path: "^src/config[a-z-]*\\.ts$" },
    },
    {
      name: "runtime-on-its-ports",
      severity: "error",
      comment:
        "The agent runtime works through its ports (run state, conversation log, spill store, trace sink) and the domain's services: only its adapters touch the database client.",
      from: { path: "^src/runtime/", pathNot: "^src/runtime/adapters/" },
      to: { path: "^src/generated/" },
    },
    {
      name: "runtime-core-imports-no-adapter",
      severity: "error",
      comment:
        "The runtime's core (the worker, the loop, memory, tools) works through its ports; which adapter stands behind a port is the composition roots' choice.",
      from: { path: "^src/runtime/", pathNot: "^src/runtime/adapters/" },
      to: { path: "^src/runtime/adapters/" },
    },
    {
      name: "runtime-ports-stand-alone",
      severity: "error",
      comment: "The runtime's ports name what the runtime needs; they import nothing else of the runtime (the domain's vocabulary, yes).",
      from: { path: "^src/runtime/ports/" },
      to: { path: "^src/runtime/", pathNot: "^src/runtime/ports/" },
    },
    {
      name: "domain-folders-acyclic",
      severity: "error",
      comment:
        "The domain's folders form no cycle: each can be read and tested with only what it imports (a folder cycle makes them one unit). Workspaces read research (eligibility, owned objects); research reaches workspaces only through its RunLinks port, which workspaces implement.",
      scope: "folder",
      from: { path: "^src/domain/[^/]+$" },
      to: { circular: true, viaOnly: { path: "^src/domain/[^/]+$" } },
    },
    {
      name: "graphql-sees-runtime-ports-only",
      severity: "error",
      comment: "The GraphQL layer reaches the runtime through src/runtime/ports, never its internals.",
      from: { path: "^src/graphql/" },
      to: { path: "^src/runtime/", pathNot: "^src/runtime/ports/" },
    },
    {
      name: "vendor-sdks-in-adapters",
      severity: "error",
      comment: "Vendor SDKs are wrapped by adapters (src/runtime/adapters, src/db, src/mcp, the Redis event target) and picked by the composition roots.",
      from: { path: "^src/", pathNot: ADAPTERS },
      to: { path: `^node_modules/(${VENDOR_SDKS.map(literally).join("|")})/` },
    },
    {
      name: "no-layer-imports-a-composition-root",
      severity: "error",
      comment:
        "The composition roots (src/compose, the entry points) build the layers; no layer imports them back. What a layer is given is typed where it lives (e.g. src/domain/services.ts).",
      from: { path: "^src/", pathNot: ["^src/compose/", "^src/(main|worker-main)\\.ts$"] },
      to: { path: "^src/compose/" },
    },
    {
      name: "sdk-stands-alone",
      severity: "error",
      comment: "The client SDK is published on its own: it imports nothing from the server's sources.",
      from: { path: "^sdk/" },
      to: { path: "^src/" },
    },
  ],
  options: {
    // Generated code is not analysed, but imports of it are seen (runtime-on-its-ports).
    doNotFollow: { path: ["node_modules", "^(src|sdk)/generated/"] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"],
    },
    skipAnalysisNotInRules: true,
    cache: { folder: "node_modules/.cache/dependency-cruiser", strategy: "content" },
  },
};
