// S4: GET /metrics in the Prometheus text format, after some activity: HTTP and GraphQL timings,
// runs by state, model tokens and calls, tool calls, and the subscriptions open right now.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { WorkspaceEventsDocument } from "../../sdk/generated/graphql.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { loadConfig } from "../../src/config.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const echo: Tool = {
  schema: { name: "echo", description: "echoes its arguments", parameters: { type: "object" } },
  execute: async (args) => JSON.stringify(args),
};

/** Scrapes /metrics; returns the raw response and the series by `name{labels}`. */
async function scrape(app: TestApp): Promise<{ contentType: string | null; text: string; series: Map<string, number> }> {
  const response = await fetch(app.server!.url.replace(/\/graphql$/, "/metrics"));
  expect(response.status).toBe(200);
  const text = await response.text();
  const series = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    // name{label="value",…} value — the exposition format, one sample a line.
    const match = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$/);
    expect(match, `a sample line: ${line}`).not.toBeNull();
    series.set(match![1]!, Number(match![2]));
  }
  // One HELP and one TYPE per metric name: strict parsers refuse a name declared twice.
  const declared = text
    .split("\n")
    .filter((line) => line.startsWith("# TYPE "))
    .map((line) => line.split(" ")[2]);
  expect(declared.length, "each metric declared once").toBe(new Set(declared).size);
  return { contentType: response.headers.get("content-type"), text, series };
}

it("/metrics reports requests, operations, runs by state, tokens, tool calls and open subscriptions", async () => {
  t = await startTestApp("pglite", {
    listen: true,
    runtime: { model: toolCallingModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-metrics-")), extraTools: [echo] },
  });
  const before = (await scrape(t)).series;
  const at = (series: Map<string, number>, key: string) => series.get(key) ?? 0;

  // A subscription over graphql-ws stays open while the run executes.
  const socketClient = t.connect();
  const server = t.connect();
  const workspace = await createWorkspace(server);
  const events = socketClient.subscribe(WorkspaceEventsDocument, { workspaceId: workspace.id });
  void events.next().catch(() => undefined);
  const open = await waitUntil(async () => {
    const series = (await scrape(t!)).series;
    return at(series, 'dossier_subscriptions_open{transport="ws"}') === 1 ? series : undefined;
  });
  expect(open.get('dossier_subscriptions_open{transport="ws"}')).toBe(1);

  // A run that calls one tool, admitted over HTTP.
  const { run } = await admit(server, { question: callTools({ name: "echo", arguments: { n: 1 } }) });
  const done = await settled(server, run.id);
  expect(done.status, done.failureReason ?? "").toBe("SUCCEEDED");

  const { contentType, text, series: after } = await scrape(t);
  expect(contentType).toBe("text/plain; version=0.0.4; charset=utf-8");
  expect(text).toContain("# TYPE dossier_http_request_duration_seconds histogram");
  expect(text).toContain("# TYPE dossier_runs gauge");

  const delta = (key: string) => at(after, key) - at(before, key);
  expect(delta('dossier_http_request_duration_seconds_count{method="POST",route="/graphql",status="200"}')).toBeGreaterThanOrEqual(3);
  expect(delta('dossier_http_request_duration_seconds_count{method="GET",route="/metrics",status="200"}')).toBeGreaterThanOrEqual(1);
  expect(delta('dossier_graphql_operation_duration_seconds_count{outcome="ok",type="mutation"}')).toBeGreaterThanOrEqual(2);
  expect(delta('dossier_graphql_operation_duration_seconds_count{outcome="ok",type="query"}')).toBeGreaterThanOrEqual(1);
  expect(after.get('dossier_runs{state="SUCCEEDED"}')).toBe(1);
  expect(after.get('dossier_runs{state="QUEUED"}')).toBe(0);
  expect(delta("dossier_model_calls_total")).toBe(2);
  expect(delta("dossier_tool_calls_total")).toBe(1);
  expect(delta('dossier_model_tokens_total{direction="input"}')).toBeGreaterThan(0);
  expect(delta('dossier_model_tokens_total{direction="output"}')).toBeGreaterThan(0);
  expect(delta('dossier_trace_spans_total{kind="RUN"}')).toBe(1);
  for (const name of ["dossier_compactions_total", "dossier_spills_total", "dossier_graphql_rejected_total"]) {
    expect(text).toContain(`# TYPE ${name} counter`);
  }

  // A refused query is counted by its reason; a closed socket's subscriptions are gone.
  await fetch(t.server!.url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query: `{ ${Array.from({ length: 40 }, (_, i) => `a${i}: __typename`).join(" ")} }` }),
  });
  await socketClient.close();
  const closed = await waitUntil(async () => {
    const series = (await scrape(t!)).series;
    return at(series, 'dossier_subscriptions_open{transport="ws"}') === 0 ? series : undefined;
  });
  expect(at(closed, 'dossier_graphql_rejected_total{reason="TOO_MANY_ALIASES"}')).toBe(1);
});

it("/metrics answers only the METRICS_TOKEN bearer when one is set: it counts every tenant's runs", async () => {
  const token = "scrape-token-0123456789";
  expect(loadConfig({ METRICS_TOKEN: token }).metricsToken).toBe(token);
  expect(() => loadConfig({ METRICS_TOKEN: "short" })).toThrow(/METRICS_TOKEN/);
  t = await startTestApp("pglite", { listen: true, metricsToken: token });
  const scrape = (authorization?: string) => fetch(new URL("/metrics", t!.server!.url), { headers: authorization ? { authorization } : {} });
  for (const refused of [await scrape(), await scrape("Bearer wrong-token-0123456789"), await scrape(token)]) {
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBe("Bearer");
    expect(await refused.text()).not.toContain("dossier_runs");
  }
  const allowed = await scrape(`Bearer ${token}`);
  expect(allowed.status).toBe(200);
  expect(await allowed.text()).toContain("dossier_runs");
});
