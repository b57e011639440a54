// Streams are keyed by everything that selects them: two subscriptions of one principal with the
// same document and different variables — whatever the variables are named — never share a stream.
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { parse } from "graphql";
import { afterEach, describe, expect, it } from "vitest";
import { idOfType } from "../../src/graphql/global-id.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { admit } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";

type Update = { traceUpdates: { seq: string; kind: string; span: { name: string } | null } };

// The run is chosen by a variable named like the position variable.
const RUN_IN_AFTER_SEQ = parse(/* GraphQL */ `
  subscription Sneaky($afterSeq: ID!) {
    traceUpdates(runId: $afterSeq) { seq kind span { name } }
  }
`) as TypedDocumentNode<Update, { afterSeq: string }>;

const ORDINARY = parse(/* GraphQL */ `
  subscription Plain($runId: ID!, $afterSeq: String) {
    traceUpdates(runId: $runId, afterSeq: $afterSeq) { seq kind span { name } }
  }
`) as TypedDocumentNode<Update, { runId: string; afterSeq?: string | null }>;

async function take(stream: AsyncIterableIterator<Update>, n: number): Promise<Update["traceUpdates"][]> {
  const out: Update["traceUpdates"][] = [];
  while (out.length < n) {
    const next = await withTimeout(stream.next(), 10_000);
    if (next.done) break;
    out.push(next.value.traceUpdates);
  }
  await stream.return?.();
  return out;
}

describe("shared subscription streams", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("two runs subscribed with one document and different variables each see only their own spans", async () => {
    t = await startTestApp("pglite", { listen: true });
    const owner = await t.createPrincipal("owner");
    const client = t.as(owner);
    const recorder = new PrismaTraceRecorder({ prisma: t.app.db.prisma, events: t.app.events });
    const runs: { id: string; traceId: string }[] = [];
    for (const name of ["alpha", "beta"]) {
      const { run } = await admit(client, { question: `run ${name}` });
      runs.push({ id: run.id, traceId: await recorder.traceFor(idOfType(run.id, "Run")!) });
    }
    const socket = t.connect(owner);
    const sneaky = runs.map((run) => socket.subscribe(RUN_IN_AFTER_SEQ, { afterSeq: run.id }));
    // Same document, same run variable, different start positions: still each its own updates.
    const positioned = [socket.subscribe(ORDINARY, { runId: runs[0]!.id }), socket.subscribe(ORDINARY, { runId: runs[1]!.id, afterSeq: "0" })];
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const [i, run] of runs.entries()) {
      const span = await recorder.startSpan({ traceId: run.traceId, kind: "RUN", name: i === 0 ? "alpha-span" : "beta-span" });
      await recorder.endSpan(span, { status: "OK" });
    }
    const seen = await Promise.all([...sneaky, ...positioned].map((stream) => take(stream, 2)));
    expect(seen.map((updates) => updates.map((u) => u.span?.name))).toEqual([
      ["alpha-span", "alpha-span"],
      ["beta-span", "beta-span"],
      ["alpha-span", "alpha-span"],
      ["beta-span", "beta-span"],
    ]);
  });
});
