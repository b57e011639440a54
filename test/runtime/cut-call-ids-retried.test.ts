// A reply cut off mid-stream after a tool call streamed: nothing of the reply stands, but runOutput
// named the call by its id, with its arguments. That id is the run's: the retry's call carrying it
// — in the same attempt, or in a later one after the attempt was handed back — gets one of
// Dossier's own, so a person deciding on the later call never sees it under an id that named
// another call (call-ids.ts). The cut call's span keeps the ids it streamed for later attempts.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { CALL_IDS_LEFT_OUT, OWN_CALL_ID_PREFIX } from "../../src/runtime/loop/call-ids.js";
import { countedDeployTool } from "../support/deploy-tool.js";
import { admit, expectType } from "../support/fixtures.js";
import { type StubTurn, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { closedAfterEach } from "../support/per-test.js";
import { startTestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const closing = closedAfterEach();

const staging: StubTurn = { toolCalls: [{ id: "call_x", name: "deploy", fragments: ['{"target":', '"staging"}'] }], cut: "end" };
const production: StubTurn = { toolCalls: [{ id: "call_x", name: "deploy", fragments: ['{"target":', '"production"}'] }] };

describe("a reply cut off after its call streamed, the retry's held call under the same id", () => {
  it.each([
    ["retried within the attempt", 2, 1],
    ["retried by a later attempt (the attempt handed back)", 0, 2],
  ])("%s: the held call gets an id of its own, with its own arguments", async (_, maxRetries, attempts) => {
    let asked = 0;
    const stub = closing(await startOpenAIStreamStub(() => (asked++ === 0 ? staging : production)));
    const counted = countedDeployTool();
    const t = closing(
      await startTestApp("pglite", {
        runtime: {
          model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, baseDelayMs: 20, maxRetries }),
          sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-cut-retried-")),
          sweepMs: 300,
          extraTools: [counted.tool],
          approvals: { rules: { deploy: "always" } },
        },
      }),
    );
    const { run } = await admit(t.client, { question: "Deploy it" });
    const waiting = await waitUntil(async () => {
      const current = expectType((await t.client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return ["QUEUED", "RUNNING"].includes(current.status) ? undefined : current;
    }, 45_000);
    expect(waiting.status).toBe("WAITING");
    const pending = waiting.pendingApprovals.edges.map((edge) => edge.node);
    expect(pending.map((approval) => [approval.toolName, approval.arguments])).toEqual([["deploy", '{"target":"production"}']]);
    // The id the cut call streamed with names no other call of the run.
    expect(pending[0]!.toolCallId).not.toBe("call_x");
    expect(pending[0]!.toolCallId.startsWith(OWN_CALL_ID_PREFIX)).toBe(true);
    expect(asked).toBe(2);
    expect(counted.calls()).toBe(0);

    const trace = (await t.client.runTrace(run.id))!;
    // Each attempt handed the run back: the cut one (when it may not retry), the one that holds the call.
    expect(trace.attempts.map((attempt) => attempt.outcome)).toEqual(Array(attempts).fill("HANDED_BACK"));
    const calls = trace.trace!.spans.filter((span) => span.kind === "MODEL_CALL").sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
    expect(calls.map((call) => call.status)).toEqual(["ERROR", "OK"]);
    expect(JSON.parse(calls[0]!.attributes as string)[CALL_IDS_LEFT_OUT]).toEqual(["call_x"]);
  });
});
