import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runtimeSettings } from "../src/compose/infrastructure.js";
import { ConfigError, loadConfig, loadMcpClientConfig } from "../src/config.js";
import { DEFAULT_RESERVED_OUTPUT, DEFAULT_SAFETY_BUFFER, DEFAULT_TRIGGER_RATIO } from "../src/runtime/memory/budget.js";
import { TOKENIZER_NAMES } from "../src/runtime/ports/tokenizer.js";
import { createDemoModel } from "../src/runtime/adapters/demo-model.js";

describe("loadConfig", () => {
  it("defaults to the embedded database in ./.data on port 4000", () => {
    expect(loadConfig({})).toMatchObject({
      port: 4000,
      host: "127.0.0.1",
      logLevel: "info",
      authRequired: false,
      database: { kind: "pglite", dataDir: "./.data" },
      model: { kind: "scripted" },
    });
  });

  it("serves only the loopback names on a loopback address, requires ALLOWED_HOSTS elsewhere without keys, and reads the list", () => {
    expect(loadConfig({}).allowedHosts).toEqual(["localhost", "127.0.0.1", "[::1]"]);
    expect(loadConfig({ HOST: "::1" }).allowedHosts).toEqual(["localhost", "127.0.0.1", "[::1]"]);
    expect(() => loadConfig({ HOST: "0.0.0.0" })).toThrow(/ALLOWED_HOSTS: must list the host names this server answers to .* HOST=0\.0\.0\.0/);
    // With keys required, any name may reach it: a rebound page holds no key.
    expect(loadConfig({ HOST: "0.0.0.0", AUTH_REQUIRED: "true" }).allowedHosts).toBeUndefined();
    expect(loadConfig({ HOST: "0.0.0.0", ALLOWED_HOSTS: " Dossier.Example.com, 10.0.0.5:4000,[::1]" }).allowedHosts).toEqual([
      "dossier.example.com",
      "10.0.0.5:4000",
      "[::1]",
    ]);
    expect(() => loadConfig({ ALLOWED_HOSTS: "https://dossier.example.com" })).toThrow(/ALLOWED_HOSTS="https:\/\/dossier.example.com": must be host names/);
  });

  it("has worker and query limit settings with defaults, and names bad values", () => {
    expect(loadConfig({})).toMatchObject({
      worker: { leaseMs: 15_000, concurrency: 4, maxRunningPerPrincipal: 4 },
      limits: {
        maxDepth: 15,
        maxAliases: 30,
        maxTokens: 5_000,
        maxCost: 100_000,
        maxBodyBytes: 1_048_576,
        maxResponseBytes: 33_554_432,
        maxPageSize: 200,
        traceRecords: 50_000,
      },
    });
    expect(loadConfig({ RUN_LEASE_MS: "2000", WORKER_CONCURRENCY: "8", METRICS_PORT: "9464", MAX_QUERY_DEPTH: "8" })).toMatchObject({
      worker: { leaseMs: 2_000, concurrency: 8, maxRunningPerPrincipal: 8, metricsPort: 9464 },
      limits: { maxDepth: 8 },
    });
    expect(loadConfig({ WORKER_CONCURRENCY: "2", MAX_RUNNING_RUNS_PER_PRINCIPAL: "1" }).worker).toMatchObject({ concurrency: 2, maxRunningPerPrincipal: 1 });
    // With keys required, one principal's runs leave a worker a slot; keyless, the one principal takes every slot.
    const cap = (env: Record<string, string>) => loadConfig(env).worker.maxRunningPerPrincipal;
    expect(cap({ AUTH_REQUIRED: "true" })).toBe(3);
    expect(cap({ DATABASE_URL: "postgres://localhost/dossier", WORKER_CONCURRENCY: "8" })).toBe(7);
    expect(cap({ DATABASE_URL: "postgres://localhost/dossier", AUTH_REQUIRED: "false", WORKER_CONCURRENCY: "8" })).toBe(8);
    expect(cap({ AUTH_REQUIRED: "true", WORKER_CONCURRENCY: "1" })).toBe(1);
    expect(cap({ AUTH_REQUIRED: "true", WORKER_CONCURRENCY: "2", MAX_RUNNING_RUNS_PER_PRINCIPAL: "2" })).toBe(2);
    expect(loadConfig({}).maxQueuedRunsPerPrincipal).toBe(1_000);
    expect(loadConfig({ MAX_QUEUED_RUNS_PER_PRINCIPAL: "25" }).maxQueuedRunsPerPrincipal).toBe(25);
    expect(() => loadConfig({ MAX_QUEUED_RUNS_PER_PRINCIPAL: "0" })).toThrow(/MAX_QUEUED_RUNS_PER_PRINCIPAL="0": must be at least 1/);
    expect(() => loadConfig({ MAX_QUEUED_RUNS_PER_PRINCIPAL: "2.5" })).toThrow(/MAX_QUEUED_RUNS_PER_PRINCIPAL="2.5"/);
    expect(loadConfig({}).maxSchedulesPerPrincipal).toBe(100);
    expect(loadConfig({ MAX_SCHEDULES_PER_PRINCIPAL: "7" }).maxSchedulesPerPrincipal).toBe(7);
    expect(() => loadConfig({ MAX_SCHEDULES_PER_PRINCIPAL: "0" })).toThrow(/MAX_SCHEDULES_PER_PRINCIPAL="0": must be at least 1/);
    expect(loadConfig({}).maxApiKeysPerPrincipal).toBe(100);
    expect(loadConfig({ MAX_API_KEYS_PER_PRINCIPAL: "3" }).maxApiKeysPerPrincipal).toBe(3);
    expect(() => loadConfig({ MAX_API_KEYS_PER_PRINCIPAL: "0" })).toThrow(/MAX_API_KEYS_PER_PRINCIPAL="0": must be at least 1/);
    expect(loadConfig({}).maxArtifactBytesPerPrincipal).toBe(1024 * 1024 * 1024);
    expect(loadConfig({ MAX_ARTIFACT_BYTES_PER_PRINCIPAL: "5000" }).maxArtifactBytesPerPrincipal).toBe(5_000);
    expect(() => loadConfig({ MAX_ARTIFACT_BYTES_PER_PRINCIPAL: "2147483648" })).toThrow(
      /MAX_ARTIFACT_BYTES_PER_PRINCIPAL="2147483648": must be at most 2147483647/,
    );
    // A principal's bucket: ten times a credential's rate by default, as many seconds' worth; 0: none; nothing without RATE_LIMIT_PER_MINUTE.
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "60" })).toMatchObject({
      rateLimit: { perMinute: 60, burst: 10 },
      principalRateLimit: { perMinute: 600, burst: 100 },
    });
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "6", RATE_LIMIT_BURST: "4", RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE: "12" }).principalRateLimit).toEqual({
      perMinute: 12,
      burst: 8,
    });
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: "6", RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE: "0" }).principalRateLimit).toBeUndefined();
    const principalOnly = loadConfig({ RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE: "12" });
    expect([principalOnly.rateLimit, principalOnly.principalRateLimit]).toEqual([undefined, undefined]);
    expect(() => loadConfig({ RUN_LEASE_MS: "10", MAX_REQUEST_BYTES: "lots" })).toThrow(
      /RUN_LEASE_MS="10": must be at least 500[\s\S]*MAX_REQUEST_BYTES="lots": must be a number/,
    );
  });

  it("switches to PostgreSQL when DATABASE_URL is set, and treats empty variables as unset", () => {
    const config = loadConfig({ DATABASE_URL: "postgres://u@db:5432/dossier", PORT: "", DATA_DIR: "/x" });
    expect(config.database).toEqual({
      kind: "postgres",
      url: "postgres://u@db:5432/dossier",
      timeouts: { connectMs: 5_000, queryMs: 65_000, statementMs: 60_000, idleInTransactionMs: 10_000 },
      poolSize: 10,
      streamPoolSize: 4,
    });
    expect(config.port).toBe(4000);
  });

  it("sizes the PostgreSQL pool by the worker's concurrency, within bounds, unless DB_POOL_SIZE says", () => {
    const url = "postgres://u@db:5432/dossier";
    const poolOf = (env: Record<string, string>) => {
      const { database } = loadConfig({ DATABASE_URL: url, ...env });
      return database.kind === "postgres" ? database.poolSize : undefined;
    };
    expect(poolOf({ WORKER_CONCURRENCY: "4" })).toBe(10);
    expect(poolOf({ WORKER_CONCURRENCY: "100" })).toBe(25);
    expect(poolOf({ WORKER_CONCURRENCY: "1000" })).toBe(50);
    expect(poolOf({ WORKER_CONCURRENCY: "100", DB_POOL_SIZE: "6" })).toBe(6);
    expect(() => loadConfig({ DATABASE_URL: url, DB_POOL_SIZE: "0" })).toThrow(/DB_POOL_SIZE="0": must be at least 1/);
    // The connections kept apart for starting live streams: 4 unless DB_STREAM_POOL_SIZE says; 0 shares the main pool.
    const streamPoolOf = (env: Record<string, string>) => {
      const { database } = loadConfig({ DATABASE_URL: url, ...env });
      return database.kind === "postgres" ? database.streamPoolSize : undefined;
    };
    expect(streamPoolOf({})).toBe(4);
    expect(streamPoolOf({ DB_STREAM_POOL_SIZE: "0" })).toBe(0);
    expect(() => loadConfig({ DATABASE_URL: url, DB_STREAM_POOL_SIZE: "-1" })).toThrow(/DB_STREAM_POOL_SIZE/);
  });

  it("reads the database's timeouts and the lease margin, which must leave the heartbeat room", () => {
    const config = loadConfig({
      DATABASE_URL: "postgresql://db/x",
      DB_CONNECT_TIMEOUT_MS: "1000",
      DB_QUERY_TIMEOUT_MS: "3000",
      DB_STATEMENT_TIMEOUT_MS: "2500",
      DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: "4000",
      RUN_LEASE_MS: "9000",
      RUN_LEASE_MARGIN_MS: "3000",
    });
    expect(config.database).toMatchObject({ timeouts: { connectMs: 1_000, queryMs: 3_000, statementMs: 2_500, idleInTransactionMs: 4_000 } });
    expect(config.worker.leaseMarginMs).toBe(3_000);
    // Unset: a fifth of the lease, at most 3 s.
    expect(loadConfig({ RUN_LEASE_MS: "2000" }).worker.leaseMarginMs).toBe(400);
    expect(loadConfig({}).worker.leaseMarginMs).toBe(3_000);
    expect(() => loadConfig({ RUN_LEASE_MS: "3000", RUN_LEASE_MARGIN_MS: "1500" })).toThrow(
      /RUN_LEASE_MARGIN_MS=1500: must be at most a third of RUN_LEASE_MS=3000/,
    );
    expect(() => loadConfig({ DB_QUERY_TIMEOUT_MS: "10" })).toThrow(/DB_QUERY_TIMEOUT_MS="10": must be at least 100/);
  });

  it("requires API keys with PostgreSQL unless explicitly disabled, and uses OpenAI when a key is set", () => {
    expect(loadConfig({ DATABASE_URL: "postgresql://db/x" }).authRequired).toBe(true);
    expect(loadConfig({ DATABASE_URL: "postgresql://db/x", AUTH_REQUIRED: "false" }).authRequired).toBe(false);
    expect(loadConfig({ OPENAI_API_KEY: "sk-test", MODEL: "m", OPENAI_BASE_URL: "http://127.0.0.1:9/v1" }).model).toEqual({
      kind: "openai",
      apiKey: "sk-test",
      baseURL: "http://127.0.0.1:9/v1",
      model: "m",
      contextWindow: 128_000,
      maxConcurrency: 16,
      idleTimeoutMs: 300_000,
      maxReplyBytes: 16_777_216,
    });
    expect(loadConfig({ OPENAI_API_KEY: "sk-test", MODEL_MAX_REPLY_BYTES: "65536" }).model).toMatchObject({ maxReplyBytes: 65_536 });
    expect(() => loadConfig({ MODEL_MAX_REPLY_BYTES: "100" })).toThrow(/MODEL_MAX_REPLY_BYTES/);
    expect(loadConfig({ OPENAI_API_KEY: "sk-test", MODEL_IDLE_TIMEOUT_MS: "60000" }).model).toMatchObject({ idleTimeoutMs: 60_000 });
    expect(() => loadConfig({ MODEL_IDLE_TIMEOUT_MS: "0" })).toThrow(/MODEL_IDLE_TIMEOUT_MS/);
    expect(loadConfig({ OPENAI_API_KEY: "sk-test", MODEL_MAX_CONCURRENCY: "3" }).model).toMatchObject({ maxConcurrency: 3 });
  });

  it("reads trusted documents settings: off by default, GRAPHIQL unset, and every manifest in TRUSTED_DOCUMENTS_DIR", () => {
    expect(loadConfig({})).toMatchObject({ trustedDocuments: { only: false, extra: {} }, graphiql: undefined });
    expect(loadConfig({ TRUSTED_DOCUMENTS_ONLY: "true", GRAPHIQL: "false" })).toMatchObject({ trustedDocuments: { only: true }, graphiql: false });
    expect(() => loadConfig({ TRUSTED_DOCUMENTS_ONLY: "yes", GRAPHIQL: "1" })).toThrow(
      /TRUSTED_DOCUMENTS_ONLY="yes": must be true or false[\s\S]*GRAPHIQL="1": must be true or false/,
    );
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-manifests-"));
    writeFileSync(path.join(dir, "a.json"), JSON.stringify({ "sha256:aa": "{ viewer { id } }", "x-app:b": "query B { viewer { name } }" }));
    writeFileSync(path.join(dir, "b.json"), JSON.stringify({ "sha256:aa": "{ viewer { id } }" }));
    writeFileSync(path.join(dir, "README.md"), "not read");
    expect(loadConfig({ TRUSTED_DOCUMENTS_DIR: dir }).trustedDocuments.extra).toEqual({
      "sha256:aa": "{ viewer { id } }",
      "x-app:b": "query B { viewer { name } }",
    });
  });

  it("names what is wrong in a TRUSTED_DOCUMENTS_DIR manifest, and a folder it cannot read", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-manifests-"));
    writeFileSync(path.join(dir, "a.json"), JSON.stringify({ "sha256:aa": "{ viewer { id } }", broken: "{ viewer {", number: 7 }));
    writeFileSync(path.join(dir, "b.json"), JSON.stringify({ "sha256:aa": "{ viewer { name } }" }));
    writeFileSync(path.join(dir, "c.json"), "[1, 2]");
    writeFileSync(path.join(dir, "d.json"), "{ not json");
    const load = () => loadConfig({ TRUSTED_DOCUMENTS_DIR: dir });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/a\.json: \[broken\] is not a GraphQL document/);
    expect(load).toThrow(/a\.json: \[number\] must be the document's text/);
    expect(load).toThrow(/b\.json: \[sha256:aa\] another manifest gives this documentId a different document/);
    expect(load).toThrow(/c\.json: must be a JSON object of documentId → document/);
    expect(load).toThrow(/d\.json: cannot be read as JSON/);
    expect(() => loadConfig({ TRUSTED_DOCUMENTS_DIR: path.join(dir, "missing") })).toThrow(/TRUSTED_DOCUMENTS_DIR=".*missing": cannot be read/);
  });

  it("reads agent profiles from AGENTS_FILE and names what is wrong in it", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-agents-"));
    const good = path.join(dir, "agents.json");
    writeFileSync(good, JSON.stringify([{ name: "analyst", systemPrompt: "You compare figures.", tools: ["task_list"], skills: ["source-*"] }]));
    expect(loadConfig({ AGENTS_FILE: good }).agents).toEqual([
      { name: "analyst", systemPrompt: "You compare figures.", tools: ["task_list"], skills: ["source-*"] },
    ]);
    const bad = path.join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify([{ name: "Bad Name", systemPrompt: "", skills: [""] }]));
    expect(() => loadConfig({ AGENTS_FILE: bad })).toThrow(/\[0\.name\] must be lower-case/);
    expect(() => loadConfig({ AGENTS_FILE: bad })).toThrow(/\[0\.systemPrompt\] must not be empty/);
    expect(() => loadConfig({ AGENTS_FILE: bad })).toThrow(/\[0\.skills\.0\]/);
    expect(() => loadConfig({ AGENTS_FILE: path.join(dir, "missing.json") })).toThrow(/cannot be read as JSON/);
  });

  it("reads per-tool compaction policies from COMPACTION_POLICIES and names what is wrong", () => {
    expect(loadConfig({}).compactionPolicies).toEqual({});
    expect(loadConfig({ COMPACTION_POLICIES: '{"*":"always","place_order":"never"}' }).compactionPolicies).toEqual({
      "*": "always",
      place_order: "never",
    });
    expect(() => loadConfig({ COMPACTION_POLICIES: "{nope" })).toThrow(/COMPACTION_POLICIES=.*is not JSON/);
    expect(() => loadConfig({ COMPACTION_POLICIES: '{"query_order":"sometimes"}' })).toThrow(
      /COMPACTION_POLICIES: \[query_order\] must be "never", "stale" or "always"/,
    );
  });

  it("reads the context budget's reserves and compaction trigger, defaulting to the built-in ones, and names bad values", () => {
    // The defaults are the runtime's own (config.ts imports nothing of the runtime, so it says them again).
    expect(loadConfig({}).contextBudget).toEqual({
      reservedOutput: DEFAULT_RESERVED_OUTPUT,
      safetyBuffer: DEFAULT_SAFETY_BUFFER,
      triggerRatio: DEFAULT_TRIGGER_RATIO,
    });
    const config = loadConfig({ CONTEXT_RESERVED_OUTPUT: "4000", CONTEXT_SAFETY_BUFFER: "0", COMPACTION_TRIGGER_RATIO: "0.5" });
    expect(config.contextBudget).toEqual({ reservedOutput: 4_000, safetyBuffer: 0, triggerRatio: 0.5 });
    // Both the server's in-process worker and worker processes take their runtime settings from here.
    expect(runtimeSettings(config, createDemoModel()).contextBudget).toEqual(config.contextBudget);
    expect(loadConfig({ COMPACTION_TRIGGER_RATIO: "1" }).contextBudget.triggerRatio).toBe(1);
    expect(() => loadConfig({ CONTEXT_RESERVED_OUTPUT: "lots", CONTEXT_SAFETY_BUFFER: "-1", COMPACTION_TRIGGER_RATIO: "0" })).toThrow(
      /CONTEXT_RESERVED_OUTPUT="lots": must be a number[\s\S]*CONTEXT_SAFETY_BUFFER="-1": must not be negative[\s\S]*COMPACTION_TRIGGER_RATIO="0": must be greater than 0 and at most 1/,
    );
    expect(() => loadConfig({ COMPACTION_TRIGGER_RATIO: "1.5" })).toThrow(/COMPACTION_TRIGGER_RATIO="1.5": must be greater than 0 and at most 1/);
    expect(() => loadConfig({ CONTEXT_RESERVED_OUTPUT: "100" })).toThrow(/CONTEXT_RESERVED_OUTPUT="100": must be at least 1024/);
    expect(() => loadConfig({ CONTEXT_SAFETY_BUFFER: "2.5" })).toThrow(/CONTEXT_SAFETY_BUFFER="2.5": must be a whole number/);
    // The reserves must leave the model's window room for the request itself.
    expect(() => loadConfig({ MODEL_CONTEXT_WINDOW: "16000", CONTEXT_RESERVED_OUTPUT: "12000", CONTEXT_SAFETY_BUFFER: "4000" })).toThrow(
      /CONTEXT_RESERVED_OUTPUT=12000 \+ CONTEXT_SAFETY_BUFFER=4000: must be less than MODEL_CONTEXT_WINDOW=16000/,
    );
  });

  it("counts tokens with the local estimator unless TOKENIZER names a BPE vocabulary, and names a bad value", () => {
    expect(loadConfig({}).tokenizer).toBe("estimate");
    expect(runtimeSettings(loadConfig({}), createDemoModel()).tokenizer).toBeUndefined();
    // The settings offer exactly the tokenizers the port knows.
    const names = TOKENIZER_NAMES.map((name) => loadConfig({ TOKENIZER: name }).tokenizer);
    expect(names).toEqual([...TOKENIZER_NAMES]);
    const bpe = runtimeSettings(loadConfig({ TOKENIZER: "o200k_base" }), createDemoModel()).tokenizer!;
    expect(bpe.name).toBe("o200k_base");
    expect(bpe.count("hello world")).toBe(2);
    expect(() => loadConfig({ TOKENIZER: "gpt2" })).toThrow(ConfigError);
    expect(() => loadConfig({ TOKENIZER: "gpt2" })).toThrow(/TOKENIZER="gpt2": must be estimate, o200k_base or cl100k_base/);
  });

  it("starts no MCP stdio program and reaches no internal MCP host until listed; fetch and commands stay off until configured", () => {
    const embedded = loadConfig({ PATH: "/usr/bin" }).capabilities;
    expect(embedded).toEqual({
      mcpStdioCommands: [],
      mcpStdioEnv: [],
      mcpHttpAllowedHosts: [],
      mcpDrainTimeoutMs: 120_000,
      mcpIdleCloseMs: 300_000,
      mcpLimits: { resultMaxBytes: 10_485_760, listMaxPages: 50, listMaxTools: 1_000, listTimeoutMs: 30_000 },
      fetch: { allowedHosts: [], maxBytes: 1_048_576, timeoutMs: 15_000 },
      commands: { allowed: false, timeoutMs: 30_000, path: "/usr/bin" },
    });
    // Starting local programs is off on every database until the operator lists them.
    expect(loadConfig({ DATABASE_URL: "postgresql://db/x" }).capabilities.mcpStdioCommands).toEqual([]);
    // Whole command lines: a principal may add arguments only after an entry ending with "…".
    expect(
      loadConfig({ MCP_STDIO_COMMANDS: "/usr/bin/npx -y @acme/mcp-files, /opt/tools/../bin/uvx mcp-server-fetch …" }).capabilities.mcpStdioCommands,
    ).toEqual([
      { program: "/usr/bin/npx", args: ["-y", "@acme/mcp-files"], moreArguments: false },
      { program: "/opt/bin/uvx", args: ["mcp-server-fetch"], moreArguments: true },
    ]);
    expect(() => loadConfig({ MCP_STDIO_COMMANDS: "npx -y x" })).toThrow(
      /MCP_STDIO_COMMANDS="npx -y x": must be command lines starting with an absolute program path/,
    );
    // The environment names a principal may set: none by default, never one that changes what runs.
    expect(loadConfig({ MCP_STDIO_ENV: "GITHUB_TOKEN, API_BASE" }).capabilities.mcpStdioEnv).toEqual(["GITHUB_TOKEN", "API_BASE"]);
    for (const name of ["NODE_OPTIONS", "LD_PRELOAD", "DYLD_INSERT_LIBRARIES", "PATH"]) {
      expect(() => loadConfig({ MCP_STDIO_ENV: `API_BASE,${name}` })).toThrow(/MCP_STDIO_ENV=.*must not list names that change what a program runs/);
    }
    // The old switch does nothing any more, and says so.
    const leftover = loadConfig({ MCP_STDIO_ALLOWED: "true" });
    expect(leftover.capabilities.mcpStdioCommands).toEqual([]);
    expect(leftover.warnings).toEqual([expect.stringContaining("MCP_STDIO_COMMANDS")]);
    const configured = loadConfig({ FETCH_ALLOWED_HOSTS: " Example.com, *.wikipedia.org ,127.0.0.1:8080", COMMANDS_ALLOWED: "true" }).capabilities;
    expect(configured.fetch.allowedHosts).toEqual(["example.com", "*.wikipedia.org", "127.0.0.1:8080"]);
    expect(configured.commands.allowed).toBe(true);
    expect(loadConfig({ MCP_HTTP_ALLOWED_HOSTS: "MCP.internal, 127.0.0.1:8931" }).capabilities.mcpHttpAllowedHosts).toEqual(["mcp.internal", "127.0.0.1:8931"]);
    // What a server may send is bounded, and a bound too small to hold an ordinary answer is refused.
    const limits = loadConfig({ MCP_RESULT_MAX_BYTES: "1048576", MCP_LIST_MAX_PAGES: "5", MCP_LIST_MAX_TOOLS: "20", MCP_LIST_TIMEOUT_MS: "2000" });
    expect(limits.capabilities.mcpLimits).toEqual({ resultMaxBytes: 1_048_576, listMaxPages: 5, listMaxTools: 20, listTimeoutMs: 2_000 });
    expect(() => loadConfig({ MCP_RESULT_MAX_BYTES: "1000" })).toThrow(/MCP_RESULT_MAX_BYTES="1000": must be at least 65536/);
    expect(() => loadConfig({ MCP_LIST_MAX_PAGES: "0" })).toThrow(/MCP_LIST_MAX_PAGES="0": must be at least 1/);
    // A wildcard would let names someone outside controls lead inside the network.
    expect(() => loadConfig({ MCP_HTTP_ALLOWED_HOSTS: "*.corp.example" })).toThrow(
      /MCP_HTTP_ALLOWED_HOSTS="\*.corp.example": must be host names without wildcards/,
    );
  });

  it("reads spill policies per tool, with the read maximum and sweep interval", () => {
    expect(loadConfig({}).spill).toEqual({ policies: {}, readMaxBytes: 16_384, sweepIntervalMs: 60_000 });
    const config = loadConfig({
      SPILL_POLICIES: '{"*":{"thresholdChars":64000},"http_fetch":{"strategy":"head","previewChars":4096},"db_query":{"enabled":false}}',
      SPILL_READ_MAX_BYTES: "32768",
    });
    expect(config.spill).toEqual({
      policies: { "*": { thresholdChars: 64_000 }, http_fetch: { strategy: "head", previewChars: 4_096 }, db_query: { enabled: false } },
      readMaxBytes: 32_768,
      sweepIntervalMs: 60_000,
    });
  });

  it("reads the hosts webhooks may reach inside the network and the delays between their attempts", () => {
    expect(loadConfig({}).webhooks).toEqual({ allowedHosts: [], retryDelaysSeconds: undefined, timeoutMs: 10_000 });
    const set = { WEBHOOK_ALLOWED_HOSTS: "Hooks.internal, 127.0.0.1:9000", WEBHOOK_RETRY_DELAYS_SECONDS: "1, 0.5,60", WEBHOOK_TIMEOUT_MS: "2000" };
    expect(loadConfig(set).webhooks).toEqual({
      allowedHosts: ["hooks.internal", "127.0.0.1:9000"],
      retryDelaysSeconds: [1, 0.5, 60],
      timeoutMs: 2_000,
    });
    expect(() => loadConfig({ WEBHOOK_TIMEOUT_MS: "100" })).toThrow(/WEBHOOK_TIMEOUT_MS="100": must be at least 500/);
    expect(() => loadConfig({ WEBHOOK_ALLOWED_HOSTS: "*.corp.example" })).toThrow(
      /WEBHOOK_ALLOWED_HOSTS="\*.corp.example": must be host names without wildcards/,
    );
    expect(() => loadConfig({ WEBHOOK_RETRY_DELAYS_SECONDS: "5,0" })).toThrow(/WEBHOOK_RETRY_DELAYS_SECONDS="5,0": must be positive numbers of seconds/);
    expect(() => loadConfig({ WEBHOOK_RETRY_DELAYS_SECONDS: "5m" })).toThrow(/must be positive numbers of seconds/);
  });

  it("reads the app's own sign-in only as a whole, and names the setting of every inconsistent combination", () => {
    expect(loadConfig({}).signIn).toBeUndefined();
    const whole = {
      AUTH_JWKS_URL: "https://auth.example.com/.well-known/jwks.json",
      AUTH_JWT_ISSUER: "https://auth.example.com/",
      AUTH_JWT_AUDIENCE: "my-app",
    };
    expect(loadConfig(whole).signIn).toEqual({
      jwksUrl: whole.AUTH_JWKS_URL,
      issuer: whole.AUTH_JWT_ISSUER,
      audience: "my-app",
      principalClaim: "sub",
      allowedHosts: [],
    });
    expect(loadConfig({ ...whole, AUTH_JWT_PRINCIPAL_CLAIM: "email" }).signIn?.principalClaim).toBe("email");
    expect(() => loadConfig({ AUTH_JWKS_URL: whole.AUTH_JWKS_URL })).toThrow(/AUTH_JWT_ISSUER: must be set with AUTH_JWKS_URL/);
    expect(() => loadConfig({ AUTH_JWKS_URL: whole.AUTH_JWKS_URL, AUTH_JWT_ISSUER: "x" })).toThrow(/AUTH_JWT_AUDIENCE: must be set/);
    expect(() => loadConfig({ AUTH_JWT_AUDIENCE: "my-app", AUTH_JWT_ISSUER: "x" })).toThrow(/AUTH_JWKS_URL: must be set/);
    expect(() => loadConfig({ AUTH_JWT_PRINCIPAL_CLAIM: "email" })).toThrow(/AUTH_JWT_PRINCIPAL_CLAIM: applies only with AUTH_JWKS_URL/);
    expect(() => loadConfig({ ...whole, AUTH_JWT_ISSUER: "dossier" })).toThrow(/AUTH_JWT_ISSUER: must not be "dossier"/);
    expect(() => loadConfig({ ...whole, AUTH_JWKS_URL: "ftp://auth.example.com/jwks" })).toThrow(
      /AUTH_JWKS_URL="ftp:\/\/auth.example.com\/jwks": must be an http\(s\) URL/,
    );
    // In clear only from a host the operator named (inside the network, read through the outbound guard).
    const local = { ...whole, AUTH_JWKS_URL: "http://127.0.0.1:8080/jwks.json" };
    expect(() => loadConfig(local)).toThrow(/AUTH_JWKS_URL: must be https:\/\/ unless its host is listed in AUTH_JWKS_ALLOWED_HOSTS/);
    expect(loadConfig({ ...local, AUTH_JWKS_ALLOWED_HOSTS: "127.0.0.1:8080" }).signIn?.allowedHosts).toEqual(["127.0.0.1:8080"]);
    expect(() => loadConfig({ ...local, AUTH_JWKS_ALLOWED_HOSTS: "*.example" })).toThrow(
      /AUTH_JWKS_ALLOWED_HOSTS="\*.example": must be host names without wildcards/,
    );
  });

  it("bounds the tool calls of one model reply: 64 execute, 8 at once, unless set; the runtime gets them", () => {
    expect(runtimeSettings(loadConfig({}), createDemoModel()).toolCallLimits).toEqual({ maxPerReply: 64, maxConcurrency: 8 });
    expect(loadConfig({ MAX_TOOL_CALLS_PER_REPLY: "10", TOOL_MAX_CONCURRENCY: "2" }).toolCallLimits).toEqual({ maxPerReply: 10, maxConcurrency: 2 });
    expect(() => loadConfig({ MAX_TOOL_CALLS_PER_REPLY: "0", TOOL_MAX_CONCURRENCY: "x" })).toThrow(
      /MAX_TOOL_CALLS_PER_REPLY="0": must be at least 1[\s\S]*TOOL_MAX_CONCURRENCY="x": must be a number/,
    );
  });

  it("bounds each run's sandbox folder, one principal's and all of them, and keeps one 24 hours after its run, unless set; the runtime gets them", () => {
    expect(runtimeSettings(loadConfig({}), createDemoModel()).sandbox).toEqual({
      limits: { maxBytes: 268_435_456, maxEntries: 10_000, maxPathDepth: 16, maxPathLength: 1_024 },
      budgets: { perPrincipal: 1_073_741_824, total: 4_294_967_296 },
      retentionHours: 24,
      sweepIntervalMs: 600_000,
    });
    const set = loadConfig({
      SANDBOX_MAX_BYTES: "1048576",
      SANDBOX_MAX_ENTRIES: "50",
      SANDBOX_MAX_PATH_DEPTH: "4",
      SANDBOX_MAX_PATH_LENGTH: "200",
      SANDBOX_MAX_BYTES_PER_PRINCIPAL: "2097152",
      SANDBOX_MAX_BYTES_TOTAL: "8388608",
      SANDBOX_RETENTION_HOURS: "0",
      SANDBOX_SWEEP_INTERVAL_MS: "60000",
    });
    expect(set.sandbox).toEqual({
      limits: { maxBytes: 1_048_576, maxEntries: 50, maxPathDepth: 4, maxPathLength: 200 },
      budgets: { perPrincipal: 2_097_152, total: 8_388_608 },
      retentionHours: 0,
      sweepIntervalMs: 60_000,
    });
    expect(() => loadConfig({ SANDBOX_MAX_ENTRIES: "0", SANDBOX_RETENTION_HOURS: "-1" })).toThrow(
      /SANDBOX_MAX_ENTRIES="0": must be at least 1[\s\S]*SANDBOX_RETENTION_HOURS="-1"/,
    );
    expect(() => loadConfig({ SANDBOX_MAX_BYTES_PER_PRINCIPAL: "100", SANDBOX_MAX_BYTES_TOTAL: "x" })).toThrow(
      /SANDBOX_MAX_BYTES_PER_PRINCIPAL="100": must be at least 1024[\s\S]*SANDBOX_MAX_BYTES_TOTAL="x": must be a number/,
    );
  });

  it("reads how often expired artifacts are swept", () => {
    expect(loadConfig({}).artifacts).toEqual({ sweepIntervalMs: 300_000 });
    expect(loadConfig({ ARTIFACT_SWEEP_INTERVAL_MS: "1000" }).artifacts).toEqual({ sweepIntervalMs: 1_000 });
  });

  it.each([
    [{ FETCH_ALLOWED_HOSTS: "https://example.com" }, /FETCH_ALLOWED_HOSTS="https:\/\/example.com": must be host names/],
    [{ COMMANDS_ALLOWED: "1" }, /COMMANDS_ALLOWED="1": must be true or false/],
    [{ AUTH_REQUIRED: "yes" }, /AUTH_REQUIRED="yes": must be true or false/],
    [{ MODEL_CONTEXT_WINDOW: "4096" }, /MODEL_CONTEXT_WINDOW="4096": must be at least 16000/],
    [{ PORT: "70000" }, /PORT="70000": must be between 0 and 65535/],
    [{ PORT: "4.5" }, /PORT="4.5": must be a whole number/],
    [{ DATABASE_URL: "localhost:5432" }, /DATABASE_URL="localhost:5432": must be a PostgreSQL URL/],
    [{ SPILL_POLICIES: "{nope" }, /SPILL_POLICIES="\{nope": must be JSON/],
    [{ SPILL_POLICIES: '{"fetch":{"thresholdChars":10}}' }, /SPILL_POLICIES=.* at fetch\.thresholdChars: must be at least 1000/],
    [{ SPILL_POLICIES: '{"fetch":{"strategy":"tail"}}' }, /at fetch\.strategy/],
  ])("rejects %o", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it("reads the MCP server's settings: the Dossier URL (default local) and an optional key", () => {
    expect(loadMcpClientConfig({})).toEqual({ url: "http://localhost:4000/graphql", apiKey: undefined });
    expect(loadMcpClientConfig({ DOSSIER_URL: "https://dossier.example/graphql", DOSSIER_API_KEY: "dsk_x" })).toEqual({
      url: "https://dossier.example/graphql",
      apiKey: "dsk_x",
    });
    expect(() => loadMcpClientConfig({ DOSSIER_URL: "ftp://x" })).toThrow(/DOSSIER_URL="ftp:\/\/x": must be an http\(s\) URL/);
  });
});
