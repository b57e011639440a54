// examples/chat.ts as an integrator runs it: a separate process, configured by DOSSIER_URL and
// DOSSIER_API_KEY, asking two questions in one conversation of a server answering with the demo model.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConversationsDocument } from "../../sdk/generated/graphql.js";
import { createDemoModel } from "../../src/runtime/adapters/demo-model.js";
import { killAll, type Spawned, spawnTs } from "../support/processes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe("examples/chat.ts", () => {
  let t: TestApp | undefined;
  const processes: Spawned[] = [];
  afterEach(async () => {
    await killAll(processes);
    await t?.close();
    t = undefined;
  });

  it("asks each question in one conversation and prints each answer as it streams", async () => {
    t = await startTestApp("pglite", {
      listen: true,
      authRequired: true,
      runtime: { model: createDemoModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-chat-")) },
    });
    const apiKey = await t.createPrincipal("chatter");
    const example = spawnTs("examples/chat.ts", {
      env: { DOSSIER_URL: t.server!.url, DOSSIER_API_KEY: apiKey },
      args: ["Who makes cells in Europe?", "And in Poland?"],
    });
    processes.push(example);
    const { code } = await example.exited;
    const output = example.output();
    expect(code, output).toBe(0);

    const [first, second] = output.split(/^> /m).filter(Boolean);
    expect(first).toMatch(/^Who makes cells in Europe\?\n\[Dossier offline demo\] This is a scripted offline demo reply/);
    expect(first).toContain('You asked: "Who makes cells in Europe?"');
    expect(second).toMatch(/^And in Poland\?\n\[Dossier offline demo\]/);
    expect(second).toContain('You asked: "And in Poland?"');
    // The answer is printed once, whole: what streamed adds up to the demo's reply.
    expect(first!.match(/\[Dossier offline demo\]/g)).toHaveLength(1);
    expect(first).toContain("restart Dossier.\n\n");

    const conversations = await t.as(apiKey).request(ConversationsDocument, { first: 5 });
    expect(conversations.conversations.edges).toHaveLength(1);
  });
});
