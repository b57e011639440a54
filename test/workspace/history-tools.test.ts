// W6, W8 through a run: the workspace context shows the catalog's first page and says how to go
// on; the model pages on with list_history (cursor in, cursor out) and finds an older material
// with search_history; exactly what each showed it is DISCOVERED in the run's ledger.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunMaterialsDocument } from "../../sdk/generated/graphql.js";
import type { ChatMessage, ModelRequest } from "../../src/runtime/ports/model.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { type SeededPublication, seedLinkedPublications } from "../support/history-seed.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const text = (m: ChatMessage): string => (typeof m.content === "string" ? m.content : "");
const listedIds = (block: string) => [...block.matchAll(/^- "[^"]+" publicationId=(\S+?):/gm)].map((match) => match[1]!);

describe.each(backends)("a run looks past the first page of its history on %s", (backend) => {
  let t: TestApp;
  const requests: ModelRequest[] = [];
  const model = new ScriptedModel({
    name: "history-tools",
    steps: (request) => {
      requests.push(request);
      const turn = request.messages.filter((m) => m.role === "assistant").length;
      if (turn > 0) return { content: "Looked through the history." };
      const context = request.messages.map(text).find((c) => c.startsWith("<workspace-context>")) ?? "";
      const after = /list_history with after="([^"]+)"/.exec(context)?.[1];
      if (!after) return { content: `No cursor in:\n${context}` };
      return {
        toolCalls: [
          { name: "list_history", arguments: { after, first: 3 } },
          { name: "search_history", arguments: { query: "zephyrine membranes" } },
        ],
      };
    },
  });

  beforeAll(async () => {
    t = await startTestApp(backend, {
      runtime: {
        model,
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-history-tools-")),
        // Every other tool's output over 200 characters would be spilled: the history tools' never
        // are, since the ledger records all they return as shown to the model.
        spill: { policies: { "*": { thresholdChars: 200, previewChars: 100 } } },
      },
    });
  });
  afterAll(async () => t?.close());

  it("pages with list_history and searches with search_history; what they showed is DISCOVERED, and nothing else", async () => {
    const workspace = await createWorkspace(t.client);
    // 57 publications: the context lists the newest 50; the oldest holds the word searched for.
    const seeded: SeededPublication[] = await seedLinkedPublications(t.app.db.prisma, workspace.id, {
      count: 57,
      content: (i, v) => (i === 0 ? `Early notes: zephyrine membranes failed the heat test (v${v}). ${"Padding words. ".repeat(2_000)}` : `Body ${i}.${v}`),
    });
    const oldest = seeded.at(-1)!;
    expect(oldest.title).toBe("Seeded report 000");

    const { run } = await admit(t.client, { workspaceId: workspace.id, question: "What did we learn about membranes?" });
    expect((await settled(t.client, run.id)).status).toBe("SUCCEEDED");

    const context = requests[0]!.messages.map(text).find((c) => c.startsWith("<workspace-context>"))!;
    expect(context).toContain("History catalog (INCOMPLETE");
    expect(listedIds(context)).toEqual(seeded.slice(0, 50).map((p) => p.globalId));

    const results = requests[1]!.messages.filter((m) => m.role === "tool").map(text);
    const page = results.find((r) => r.startsWith("<history-catalog"))!;
    expect(listedIds(page)).toEqual(seeded.slice(50, 53).map((p) => p.globalId));
    const next = /list_history with after="([^"]+)"/.exec(page)?.[1];
    expect(next).toBeDefined();
    expect(next).not.toBe(/list_history with after="([^"]+)"/.exec(context)?.[1]);
    const found = results.find((r) => r.startsWith("<history-search"))!;
    expect(found).toContain(`"Seeded report 000" publicationId=${oldest.globalId} version 1`);
    expect(found).toContain("«zephyrine» «membranes»");
    // A snippet of the 30,000-character body, not the body.
    expect(found.length).toBeLessThan(1_000);

    const discovered = (await t.client.request(RunMaterialsDocument, { id: run.id, stage: "DISCOVERED" })).run!.materialUses.edges.map((edge) => edge.node);
    const ids = new Set(discovered.map((use) => use.publicationId));
    // The context's 50, list_history's 3 and the search's hit; not the three nobody was shown.
    expect([...ids].sort()).toEqual([...seeded.slice(0, 53), oldest].map((p) => p.globalId).sort());
    for (const hidden of seeded.slice(53, 56)) expect(ids.has(hidden.globalId)).toBe(false);
    expect(discovered.find((use) => use.publicationId === oldest.globalId)).toMatchObject({ version: 1, publicationVersion: { id: expect.any(String) } });
  }, 60_000);
});
