// At-least-once webhooks across a crash (issue 22): the server as `npm start` runs it is killed
// with SIGKILL after the change committed and while its event's delivery is in flight (the
// receiver holds the first request unanswered); started again on the same data, it delivers the
// event — same event id, signed — without being asked. PostgreSQL delivers through pg-boss (a job
// of a dead process expires, WEBHOOK_TIMEOUT_MS and 10 s more after it started, and is retried); the
// embedded default resumes from its outbox rows.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createClient } from "../../sdk/client.js";
import { ArchiveWorkspaceDocument, CreateWebhookDocument } from "../../sdk/generated/graphql.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { killAll, type Spawned, spawnBuilt } from "../support/processes.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";

const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer(env: Record<string, string>): Promise<{ server: Spawned; url: string }> {
  const server = spawnBuilt("src/main.ts", { env: { PORT: "0", AUTH_REQUIRED: "false", ...env } });
  running.push(server);
  const listening = await server.waitForOutput(/"url":"http:[^"]+"/, 60_000);
  return { server, url: (JSON.parse(`{${listening}}`) as { url: string }).url };
}

describe.each(backends)("webhooks across a crash on %s", (backend) => {
  let receiver: Receiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  it("delivers an event committed before a SIGKILL once the server is started again", { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-webhook-crash-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const database = backend === "postgres" ? await createPostgresDatabase() : undefined;
    if (database) cleanups.push(() => database.drop());
    receiver = await startReceiver(["hang"]);
    const env = {
      DATA_DIR: dir,
      ...(database ? { DATABASE_URL: database.url, SECRETS_KEY: randomBytes(32).toString("base64") } : {}),
      WEBHOOK_ALLOWED_HOSTS: receiver.host,
      WEBHOOK_RETRY_DELAYS_SECONDS: "1,1",
      WEBHOOK_TIMEOUT_MS: "2000",
    };

    const first = await startServer(env);
    const client = createClient({ url: first.url });
    const created = await client.request(CreateWebhookDocument, { input: { url: receiver.url, events: ["WORKSPACE_ARCHIVED"] } });
    const { secret } = expectType(created.createWebhook, "CreateWebhookSuccess");
    const workspace = await createWorkspace(client);
    expectType((await client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } })).archiveWorkspace, "ArchiveWorkspaceSuccess");
    // The change committed; its delivery is in flight and unanswered when the server dies.
    await vi.waitFor(() => expect(receiver!.received).toHaveLength(1), { timeout: 20_000 });
    first.server.child.kill("SIGKILL");
    expect((await first.server.exited).signal).toBe("SIGKILL");

    await startServer(env);
    await vi.waitFor(() => expect(receiver!.received).toHaveLength(2), { timeout: 60_000, interval: 200 });
    const [lost, delivered] = receiver.received;
    expect(delivered!.headers["webhook-id"]).toBe(lost!.headers["webhook-id"]);
    expect(receiver.verify(delivered!, secret)).toMatchObject({ type: "WORKSPACE_ARCHIVED", data: { workspaceId: workspace.id } });
    if (database) {
      // The dead server's job was given up on 10 s after the attempt's timeout (12 s), not after the default's 20 s.
      const sql = new pg.Client({ connectionString: database.url });
      await sql.connect();
      cleanups.push(() => sql.end());
      const { rows } = await sql.query("SELECT extract(epoch FROM expire_in)::int AS seconds FROM pgboss.job WHERE name = 'dossier-webhook-attempt'");
      expect(rows.map((row) => row.seconds)).toEqual([12]);
    }
  });
});
