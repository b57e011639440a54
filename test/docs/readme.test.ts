// The README, executed. A fresh server started as "Start it" says, with a key made as "API keys"
// says; then every ```graphql block of README.md in order, as written, its placeholders filled from
// earlier answers ("Try it" says how): queries and mutations over HTTP, subscriptions over
// graphql-ws (a run's also over SSE); and the shell examples that are cheap and deterministic. The
// README is read when the test runs, so a changed example is tested as changed.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { FormattedExecutionResult } from "graphql";
import { afterAll, describe, expect, it } from "vitest";
import { projectRoot } from "../support/processes.js";
import {
  fillPlaceholders,
  operationOf,
  post,
  type ReadmeServer,
  readmeBlocks,
  type Subscription,
  startReadmeServer,
  subscribeSse,
  subscribeWs,
  withoutNpm,
} from "../support/readme.js";
import { withTimeout } from "../support/wait.js";

const sh = promisify(execFile);
type Data = Record<string, unknown>;
type Rows = Data[];

/** The shell blocks this test runs, by how they begin; the others, and why not here. */
const SHELL_RUN = ["npm start", "npm run key:create", "curl ", "DOSSIER_URL="];
const SHELL_NOT_RUN: Record<string, string> = {
  "npm test": "the suite this test belongs to",
  "SPILL_POLICIES=": "a setting's value: test/config.test.ts reads the same one",
  "TOOL_APPROVALS=": "a setting's value: test/runtime/approval-policy.test.ts reads the same one",
  "npm run key:revoke": "it revokes the key the examples use: test/server/key-revocation.test.ts runs it",
  "AUTH_JWKS_URL=": "settings' values for an identity provider of your own: test/config.test.ts reads them, test/server/sign-in.test.ts serves a JWKS",
  "export DATABASE_URL": "a deployment on PostgreSQL and Redis: test/runtime/worker-processes.test.ts runs its processes",
  "CORS_ORIGINS=": "the example app: test/examples/example-app-browser.test.ts builds it and drives it in Chromium",
};
/** Subscriptions that end by themselves, after the run's terminal status. */
const FINITE = new Set(["runEvents", "traceUpdates"]);
const TERMINAL = ["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"];

const dataDir = mkdtempSync(path.join(tmpdir(), "dossier-readme-"));
let server: ReadmeServer | undefined;
afterAll(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

function shellBlock(start: string): string {
  const block = readmeBlocks().find((b) => b.lang === "sh" && b.text.startsWith(start));
  if (!block) throw new Error(`README.md has no sh block beginning with ${start}`);
  return block.text;
}

/** A README shell block as sh runs it in the project folder, addressed to the server at origin. */
async function runShell(text: string, env: Record<string, string>, origin?: string): Promise<string> {
  const command = withoutNpm(origin ? text.replaceAll("http://127.0.0.1:4000", origin) : text);
  const { stdout } = await sh("sh", ["-c", command], { cwd: projectRoot, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env } });
  return stdout;
}

describe("README.md", () => {
  it("has each shell example either run here or covered by another test", () => {
    const texts = readmeBlocks()
      .filter((b) => b.lang === "sh")
      .map((b) => b.text);
    for (const text of texts) {
      const known = [...SHELL_RUN, ...Object.keys(SHELL_NOT_RUN)].filter((start) => text.startsWith(start));
      expect(known, `a new shell example: run it in test/docs/readme.test.ts or say why not:\n${text}`).toHaveLength(1);
    }
    for (const start of SHELL_RUN)
      expect(
        texts.some((text) => text.startsWith(start)),
        start,
      ).toBe(true);
  });

  it("has each mutation example show an expected failure's message", () => {
    const mutations = readmeBlocks().filter((b) => b.lang === "graphql" && b.text.trimStart().startsWith("mutation"));
    expect(mutations.length).toBeGreaterThan(3);
    for (const { text } of mutations) expect(text, `a typed error without its message:\n${text}`).toContain("... on Error { message }");
  });

  it("works as written on a fresh server: the key, curl, every GraphQL example in order, the example script", async () => {
    const keyOutput = await runShell(shellBlock("npm run key:create"), { DATA_DIR: dataDir });
    const key = /dsk_[A-Za-z0-9_-]+/.exec(keyOutput)?.[0];
    expect(key, keyOutput).toBeDefined();

    server = await startReadmeServer(withoutNpm(shellBlock("npm start")), { DATA_DIR: dataDir });
    const origin = new URL(server.url).origin;
    const curl = await runShell(shellBlock("curl "), { DOSSIER_API_KEY: key! }, origin);
    expect(JSON.parse(curl)).toEqual({ data: { viewer: { name: "Research team" } } });

    const graphqlBlocks = readmeBlocks().filter((b) => b.lang === "graphql");
    expect(graphqlBlocks.length).toBeGreaterThanOrEqual(12);
    const answers = await runGraphqlExamples(server, key!, graphqlBlocks);
    expectMeaningful(answers);

    // "Try it" a second time on the same server works as written too, and admits a new run.
    const again = await runGraphqlExamples(server, key!, tryItBlocks());
    const admitted = (rows: Rows) => rows.filter((a) => a.admitRun).map((a) => a.admitRun as { replayed?: boolean; run: { id: string } });
    expect(admitted(again)[0]?.replayed).toBe(false);
    expect(admitted(again)[0]?.run.id).not.toBe(admitted(answers)[0]?.run.id);

    const example = await runShell(shellBlock("DOSSIER_URL=").replace("<key>", key!), {}, origin);
    expect(example).toMatch(/^run \S+ admitted/m);
    expect(example).toContain("run SUCCEEDED");
  }, 360_000);
});

/** Runs each GraphQL block in order; returns every answer's data, subscriptions' last update included. */
async function runGraphqlExamples(live: ReadmeServer, key: string, blocks: { text: string }[]): Promise<Rows> {
  const answers: Rows = [];
  const open: { query: string; subscription: Subscription }[] = [];
  for (const block of blocks) {
    const query = fillPlaceholders(block.text, answers);
    const { type, fields } = operationOf(query);
    if (type !== "subscription") {
      const result = await post(live.url, key, query);
      expectData(result, query);
      // Expected failures come back as typed errors in the payload: each example must succeed.
      if (type === "mutation")
        for (const payload of Object.values(result.data!)) expect((payload as { __typename: string }).__typename, query).toMatch(/Success$/);
      answers.push(result.data!);
    } else if (FINITE.has(fields[0]!)) {
      const subscription = subscribeWs(live.url, key, query);
      // The README says it completes after the terminal status; a demo run settles in about a second.
      await withTimeout(subscription.completed, 30_000);
      for (const result of subscription.results) expectData(result, query);
      const updates = subscription.results.map((r) => r.data!);
      expectRunFinished(fields[0]!, updates);
      expectRunFinished(
        fields[0]!,
        (await withTimeout(subscribeSse(live.url, key, query), 30_000)).map((r) => r.data!),
      );
      answers.push(updates.at(-1)!);
    } else {
      // Open until the end, like GraphiQL in a second window: the next example starts once the server has it.
      const subscription = subscribeWs(live.url, key, query);
      open.push({ query, subscription });
      await Promise.race([expect.poll(() => live.wsSubscriptions(), { timeout: 10_000 }).toBe(open.length), endsEarly(subscription, query)]);
    }
  }
  for (const { query, subscription } of open) {
    for (const result of subscription.results) expectData(result, query);
    answers.push({ opened: subscription.results.map((r) => r.data!) });
    subscription.stop();
  }
  return answers;
}

/** The GraphQL blocks of the README's "Try it" section, in order. */
function tryItBlocks(): { text: string }[] {
  const readme = readFileSync(path.join(projectRoot, "README.md"), "utf8");
  const section = /^## Try it\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? "";
  const blocks = [...section.matchAll(/^```graphql\n([\s\S]*?)^```$/gm)].map(([, text]) => ({ text: text! }));
  expect(blocks.length).toBeGreaterThanOrEqual(8);
  return blocks;
}

/** Rejects if an open-ended subscription fails or ends while the examples still run. */
function endsEarly(subscription: Subscription, query: string): Promise<never> {
  return new Promise((_, reject) => {
    subscription.completed.then(
      () => subscription.running && reject(new Error(`the subscription ended by itself: ${JSON.stringify(subscription.results)}\n${query}`)),
      (error: unknown) => reject(new Error(`the subscription failed: ${JSON.stringify(error)}\n${query}`)),
    );
  });
}

function expectData(result: FormattedExecutionResult<Data>, query: string): void {
  expect(result.errors, query).toBeUndefined();
  expect(result.data, query).toBeTruthy();
  for (const [field, value] of Object.entries(result.data!)) expect(value, `${field} in\n${query}`).not.toBeNull();
}

/** A run's subscription showed something and completed after the run's terminal status. */
function expectRunFinished(field: string, updates: Rows): void {
  expect(updates.length, field).toBeGreaterThan(0);
  const last = updates.at(-1)![field] as Data;
  if (field === "runEvents") {
    expect(updates.map((u) => (u.runEvents as Data).status).filter((s) => TERMINAL.includes(s as string))).toEqual(["SUCCEEDED"]);
    expect(last.status).toBe("SUCCEEDED");
    expect((last.run as Data).answer).toEqual(expect.any(String));
  } else {
    // Without afterSeq: the whole trace, from its first update, in order, ending with TRACE_ENDED.
    const seqs = updates.map((u) => Number((u.traceUpdates as Data).seq));
    expect(seqs[0]).toBe(1);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(updates.some((u) => ((u.traceUpdates as Data).span as Data | null)?.kind === "MODEL_CALL")).toBe(true);
    expect(last.kind).toBe("TRACE_ENDED");
  }
}

/** What a reader would look for in the answers: not only no errors, but the thing each example shows. */
function expectMeaningful(answers: Rows): void {
  const latest = (field: string) => answers.findLast((a) => a[field] != null)?.[field] as Data;
  const watched = (answers.findLast((a) => a.opened)?.opened ?? []) as Rows;
  expect(watched.map((e) => (e.workspaceEvents as Data).kind)).toContain("GOAL_UPDATED");
  // The RUNNING list ("Live run lists") saw the run of "Try it" start and end.
  const listed = answers.flatMap((a) => (a.opened ?? []) as Rows).flatMap((e) => (e.runsChanged ? [e.runsChanged as Data] : []));
  expect(listed.map((update) => update.kind)).toEqual(expect.arrayContaining(["ADDED", "REMOVED"]));
  expect(latest("workspaces")).toMatchObject({ edges: [{ node: { goal: { version: 2, statement: "Only LFP cells" } } }] });
  const run = latest("run");
  expect(run).toMatchObject({ status: "SUCCEEDED", model: "scripted:demo", answer: expect.any(String) });
  expect((run.messages as { edges: unknown[] }).edges.length).toBeGreaterThan(1);
  // The first run's answer was published and linked: the workspace's history lists it.
  const catalog = latest("workspace").historyCatalog as { entries: unknown[] };
  expect(catalog.entries.length).toBeGreaterThan(0);
  expect(JSON.parse((latest("modelCall").request as string) ?? "null")).toEqual(expect.any(Array));
  expect(latest("finalReply").payload).toBe(run.answer);
}
