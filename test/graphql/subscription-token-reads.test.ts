// Two access tokens of one principal watch one run with runEvents: token A may SUBSCRIBE to the
// run's whole conversation, token B to the run only. Each event is shared by both subscribers, yet
// each token's reads are its own: B never sees the conversation's messages, A always does,
// whichever subscribed first.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "graphql-ws";
import { afterAll, expect, it } from "vitest";
import { WebSocket } from "ws";
import { CreateAccessTokenDocument } from "../../sdk/generated/graphql.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { admit, expectType, startConversation } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp | undefined;
afterAll(async () => t?.close());

const RUN_EVENTS = `subscription($runId: ID!) { runEvents(runId: $runId) { status run { id conversation { id messages { edges { node { content } } } } } } }`;

type Delivered = {
  data?: { runEvents: { status: string; run: { conversation: { messages: { edges: { node: { content: string } }[] } | null } } } | null };
  errors?: { message: string }[];
};

/** Watches the run until its events end; `seen` gets each event as it comes. */
function watch(url: string, token: string, runId: string, seen: Delivered[]): Promise<void> {
  const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, lazy: false });
  return new Promise((resolve, reject) => {
    client.subscribe<Delivered["data"]>(
      { query: RUN_EVENTS, variables: { runId } },
      {
        next: (value) => void seen.push(value as Delivered),
        error: (error) => reject(error instanceof Error ? error : new Error(JSON.stringify(error))),
        complete: () => void Promise.resolve(client.dispose()).then(resolve),
      },
    );
  });
}

async function firstEvent(seen: Delivered[]): Promise<void> {
  while (seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
}

it.each([["A alone"], ["A first"], ["B first"]])(
  "a run-only token never reads its conversation's messages on a shared event, a conversation token always does: %s",
  async (order) => {
    t ??= await startTestApp("pglite", {
      authRequired: true,
      listen: true,
      runtime: {
        model: new ScriptedModel({
          name: "m",
          steps: (request) =>
            JSON.stringify(request).includes("slow") ? { content: "slow answer", delayMs: 1500 } : { content: "SECRET answer of the first run" },
        }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "subscription-token-reads-")),
      },
    });
    const client = t.as(await t.createPrincipal(`Principal ${order}`));
    const conversation = await startConversation(client, "Shared conversation");
    const first = (await admit(client, { conversationId: conversation.id, question: "First question" })).run;
    await settled(client, first.id);
    const second = (await admit(client, { conversationId: conversation.id, question: "slow please" })).run;
    const mint = async (resourceId: string) =>
      expectType(
        (await client.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId, operations: ["SUBSCRIBE"] }] } })).createAccessToken,
        "CreateAccessTokenSuccess",
      ).token;
    const tokenA = await mint(conversation.id);
    const tokenB = await mint(second.id);
    const seenA: Delivered[] = [];
    const seenB: Delivered[] = [];
    const url = t.server!.wsUrl;
    const watching: Promise<void>[] = [];
    const [firstToken, firstSeen, thenToken, thenSeen]: [string, Delivered[], string, Delivered[]] =
      order === "B first" ? [tokenB, seenB, tokenA, seenA] : [tokenA, seenA, tokenB, seenB];
    watching.push(watch(url, firstToken, second.id, firstSeen));
    if (order !== "A alone") {
      await firstEvent(firstSeen);
      watching.push(watch(url, thenToken, second.id, thenSeen));
    }
    await Promise.all(watching);

    // A reads the conversation's messages, the first run's answer among them, on every event.
    expect(seenA.length).toBeGreaterThan(0);
    for (const event of seenA) {
      expect(event.errors).toBeUndefined();
      expect(event.data!.runEvents!.run.conversation!.messages!.edges.map((edge) => edge.node.content)).toContain("SECRET answer of the first run");
    }
    expect(seenA.at(-1)!.data!.runEvents!.status).toBe("SUCCEEDED");
    // B is refused them on every event.
    if (order !== "A alone") {
      expect(seenB.length).toBeGreaterThan(0);
      expect(JSON.stringify(seenB)).not.toContain("SECRET");
      for (const event of seenB) expect(event.errors?.[0]?.message).toMatch(/cannot read/);
    }
  },
  60_000,
);
