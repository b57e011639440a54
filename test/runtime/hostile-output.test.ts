// Output is not input: a table of hostile outputs against the server as operators start it
// (the bundle with Dossier's Node.js flags, --max-old-space-size=1024), a real HTTP server speaking
// the OpenAI protocol as the model, and a real MCP server process that streams what it answers.
// Both transports are covered: a STDIO server writes 300 MB on one line, an HTTP server a 300 MB
// JSON body. Every run ends SUCCEEDED, and the server's resident memory — sampled throughout, and its peak
// (VmHWM) at the end — stays under its heap limit, even while a server streams 300 MB at it.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createClient, type DossierClient } from "../../sdk/client.js";
import { McpServersDocument, UpsertMcpServerDocument } from "../../sdk/generated/graphql.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { type ChatBody, type OpenAIStreamStub, type StubTurn, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { questionOf } from "../support/requests.js";
import { killAll, projectRoot, type Spawned, spawnBuilt, spawnTs } from "../support/processes.js";

const SERVER_SCRIPT = path.join(projectRoot, "test/support/mcp-test-server.ts");
const HEAP_LIMIT_MB = 1024;
const LONG_CALL_ID = randomBytes(2_250).toString("base64url"); // 3,000 characters that do not compress

type Case = { call?: { id?: string; tool?: string; arguments: object }; answer?: string[] };
/** Each row: what the model does for the question that names it. */
const CASES: Record<string, Case> = {
  "invisible-answer": { answer: ["\u200B\u200B\u200B"] },
  "long-answer": { answer: Array.from({ length: 12 }, () => "y".repeat(100_000)) },
  "mcp-error-3mb": { call: { arguments: { bytes: 3_000_000, error: true } } },
  // Its own server: a STDIO server whose message was refused is stopped (started again by a later run).
  "mcp-result-300mb": { call: { tool: "mcp__streaming__huge", arguments: { bytes: 300_000_000, stream: true } } },
  "mcp-http-300mb": { call: { tool: "mcp__web__huge", arguments: { bytes: 300_000_000, stream: true } } },
  // The SDK's HTTP server answers as an SSE stream: one 12 MB event, over the 10 MiB default cap.
  "mcp-http-sse-12mb": { call: { tool: "mcp__web__huge", arguments: { bytes: 12_000_000 } } },
  "call-id-3000": { call: { id: LONG_CALL_ID, arguments: { bytes: 50_000 } } },
};

/** What the model was shown of each case's tool result, by case. */
const shown = new Map<string, string>();

function turnFor(body: ChatBody): StubTurn {
  const asked = body.messages.findLastIndex((m) => m.role === "user");
  // The question itself: the workspace context before it may name earlier runs' questions.
  const name = Object.keys(CASES).find((key) => questionOf(String(body.messages[asked]?.content)) === `Handle [${key}]`);
  const row = name ? CASES[name]! : {};
  const result = body.messages.slice(asked).find((m) => m.role === "tool");
  if (row.call && !result) {
    return { toolCalls: [{ id: row.call.id ?? `call_${name}`, name: row.call.tool ?? "mcp__hostile__huge", fragments: [JSON.stringify(row.call.arguments)] }] };
  }
  if (result && name) shown.set(name, String(result.content));
  return { text: row.answer ?? [`done after a result of ${String(result?.content ?? "").length} characters`] };
}

/** Resident set size and its peak of a process, in MB, from /proc. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
  return { rss: kb("VmRSS") / 1024, peak: kb("VmHWM") / 1024 };
}

// PostgreSQL where it runs (always on CI): the embedded database alone holds ~900 MB of RSS.
const backend = backends.includes("postgres") ? "postgres" : "pglite";

describe(`hostile outputs against a server process on ${backend}`, () => {
  const running: Spawned[] = [];
  const cleanups: (() => Promise<void> | void)[] = [];
  let stub: OpenAIStreamStub;
  let server: Spawned;
  let client: DossierClient;

  let webUrl: string;

  beforeAll(async () => {
    stub = await startOpenAIStreamStub(turnFor);
    const web = spawnTs("test/support/mcp-test-server.ts", { args: ["--http", "--name", "web", "--variant", "hostile"] });
    running.push(web);
    webUrl = (await web.waitForOutput(/http:\/\/127\.0\.0\.1:\d+\/mcp/, 30_000)).trim();
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-hostile-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const database = backend === "postgres" ? await createPostgresDatabase() : undefined;
    if (database) cleanups.push(() => database.drop());
    server = spawnBuilt("src/main.ts", {
      env: {
        PORT: "0",
        AUTH_REQUIRED: "false",
        DATA_DIR: dir,
        ...(database ? { DATABASE_URL: database.url, SECRETS_KEY: randomBytes(32).toString("base64") } : {}),
        OPENAI_API_KEY: "sk-local",
        OPENAI_BASE_URL: stub.baseURL,
        MODEL: "stub-model",
        MCP_STDIO_COMMANDS: `${process.execPath} …`,
        MCP_HTTP_ALLOWED_HOSTS: new URL(webUrl).host,
      },
    });
    running.push(server);
    const listening = await server.waitForOutput(/"url":"http:[^"]+"/, 60_000);
    client = createClient({ url: (JSON.parse(`{${listening}}`) as { url: string }).url });
  }, 90_000);

  afterAll(async () => {
    await killAll(running);
    await stub?.close();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("every run SUCCEEDS, what the model is shown is bounded, and the server's memory stays under its heap limit", { timeout: 180_000 }, async () => {
    const stdio = (name: string, variant: string) => ({
      name,
      transport: "STDIO" as const,
      command: process.execPath,
      args: ["--import", "tsx", SERVER_SCRIPT, "--name", name, "--variant", variant],
    });
    for (const input of [stdio("hostile", "hostile"), stdio("streaming", "hostile"), stdio("endless", "endless-list")]) {
      expectType((await client.request(UpsertMcpServerDocument, { input })).upsertMcpServer, "UpsertMcpServerSuccess");
    }
    const http = { name: "web", transport: "HTTP" as const, url: webUrl };
    expectType((await client.request(UpsertMcpServerDocument, { input: http })).upsertMcpServer, "UpsertMcpServerSuccess");
    let maxRss = 0;
    const sampler = setInterval(() => {
      maxRss = Math.max(maxRss, memoryOf(server.child.pid!).rss);
    }, 50);
    try {
      const workspace = await createWorkspace(client);
      const runs = await Promise.all(
        Object.keys(CASES).map(async (name) => [name, (await admit(client, { workspaceId: workspace.id, question: `Handle [${name}]` })).run.id] as const),
      );
      const settled = await Promise.all(
        runs.map(async ([name, id]) => {
          const run = await vi.waitFor(
            async () => {
              const view = (await client.runTrace(id))!;
              if (["QUEUED", "RUNNING", "WAITING"].includes(view.status)) throw new Error(`${name} still ${view.status}`);
              return view;
            },
            { timeout: 150_000, interval: 250 },
          );
          return [name, run] as const;
        }),
      );
      const byName = Object.fromEntries(settled);
      expect(Object.fromEntries(settled.map(([name, run]) => [name, [run.status, run.failureReason]]))).toEqual(
        Object.fromEntries(Object.keys(CASES).map((name) => [name, ["SUCCEEDED", null]])),
      );
      expect(byName["invisible-answer"]!.publicationOutcome).toBe("NO_VISIBLE_CHARACTERS");
      expect(byName["long-answer"]!.answer).toHaveLength(1_200_000);
      expect(byName["long-answer"]!.publicationOutcome).toBe("TOO_LONG");
      // The 3 MB error result was spilled: the model saw a preview and a handle, not 3 MB.
      expect(shown.get("mcp-error-3mb")!.length).toBeLessThan(10_000);
      expect(shown.get("mcp-error-3mb")).toContain("spill://");
      // The 300 MB result was refused while it arrived: the model read why, and the run went on.
      expect(shown.get("mcp-result-300mb")).toContain("MCP_RESULT_MAX_BYTES");
      expect(shown.get("mcp-http-300mb")).toContain("MCP_RESULT_MAX_BYTES");
      expect(shown.get("mcp-http-sse-12mb")).toContain("MCP_RESULT_MAX_BYTES");
      expect(shown.get("call-id-3000")).toContain("spill://");
      // The endless tools/list stopped at MCP_LIST_MAX_PAGES (50 pages of one tool).
      const endless = (await client.request(McpServersDocument, {})).mcpServers.edges.map((edge) => edge.node).find((s) => s.name === "endless")!;
      expect(endless.status.state).toBe("CONNECTED");
      expect(endless.status.tools).toHaveLength(50);
    } finally {
      clearInterval(sampler);
    }
    const { peak } = memoryOf(server.child.pid!);
    console.info(`hostile outputs: server RSS peak ${peak.toFixed(0)} MB (sampled max ${maxRss.toFixed(0)} MB), heap limit ${HEAP_LIMIT_MB} MB`);
    if (backend === "postgres") expect(peak).toBeLessThan(HEAP_LIMIT_MB);
    expect(server.child.exitCode).toBeNull();
  });
});
