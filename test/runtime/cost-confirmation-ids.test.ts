// A cost confirmation is decided by its id (decideToolCall), like a tool call. Its id is one the
// run has not used: a model whose call took the id a confirmation would get cannot make a
// decision on that call — a stale page, a second client — confirm the run's spending.
import { mkdtempSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AlreadyDecidedError } from "../../src/domain/errors.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends } from "../support/databases.js";
import { type Body, PRICE, startPricedServer } from "../support/priced-model-server.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** The id a confirmation of confirmCostAbove 1.5 was decided by before its ids were made unique in the run. */
const CONFIRMATION_ID = "cost-confirmation:1.5";

describe.each(backends)("a model's call with the id of the run's cost confirmation (%s)", (backend) => {
  let server: Server;
  let t: TestApp;
  const bodies: Body[] = [];

  beforeAll(async () => {
    // The model's first call (task_list, held for approval) has the id; its second reply answers.
    server = await startPricedServer(bodies, 2, undefined, () => CONFIRMATION_ID);
    const { port } = server.address() as AddressInfo;
    t = await startTestApp(backend, {
      runtime: {
        model: new OpenAIModel({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "sk-local", model: "priced-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-confirmation-ids-")),
        contextBudget: { reservedOutput: 10 },
        approvals: { rules: { task_list: "always", "*": "never" } },
      },
    });
    await t.app.db.prisma.modelPrice.create({ data: PRICE });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("a stale approval of that call does not confirm the spending: it is already decided, and no further request is made", { timeout: 90_000 }, async () => {
    const { id: principalId } = await t.app.db.prisma.principal.create({ data: { name: "confirms" } });
    const actor = { principalId };
    const { run } = await t.app.services.admissions.admitRun(actor, { question: "Spend with care", limits: { maxTurns: 50, confirmCostAbove: "1.5" } });
    const open = (kind: "TOOL_CALL" | "COST_CONFIRMATION") =>
      vi.waitFor(
        async () => {
          const current = await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: run.id } });
          expect(current.status).toBe("WAITING");
          return await t.app.db.prisma.toolApproval.findFirstOrThrow({ where: { runId: run.id, kind, decision: null } });
        },
        { timeout: 40_000, interval: 100 },
      );

    // A person's page shows the held call; another client rejects it and the run goes on, to the threshold.
    const call = await open("TOOL_CALL");
    expect(call.toolCallId).toBe(CONFIRMATION_ID);
    await t.app.services.toolApprovals.decide(actor, { runId: run.id, toolCallId: CONFIRMATION_ID, decision: "REJECT", reason: "not now" });
    const confirmation = await open("COST_CONFIRMATION");

    // The page's stale approval of the call comes in; then the owner declines to spend more.
    const stale = await t.app.services.toolApprovals
      .decide(actor, { runId: run.id, toolCallId: CONFIRMATION_ID, decision: "APPROVE" })
      .catch((error: unknown) => error);
    const stillOpen = await t.app.db.prisma.toolApproval.findUniqueOrThrow({ where: { id: confirmation.id } });
    if (stale instanceof AlreadyDecidedError) {
      await t.app.services.toolApprovals.decide(actor, { runId: run.id, toolCallId: confirmation.toolCallId, decision: "REJECT", reason: "too dear" });
    }
    const ended = await vi.waitFor(
      async () => {
        const current = await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: run.id } });
        expect(["QUEUED", "RUNNING", "WAITING"]).not.toContain(current.status);
        return current;
      },
      { timeout: 40_000, interval: 100 },
    );
    // The model was asked once: the spending past 1.5 was never confirmed.
    expect(bodies).toHaveLength(1);
    expect(ended).toMatchObject({ status: "SUCCEEDED", stopReason: "BUDGET" });

    // The stale approval found the call's request, decided; the confirmation has an id of its own and stayed open.
    expect(stale).toBeInstanceOf(AlreadyDecidedError);
    expect((stale as AlreadyDecidedError).approval.id).toBe(call.id);
    expect(confirmation.toolCallId).toBe(`${CONFIRMATION_ID}:2`);
    expect(stillOpen.decision).toBeNull();
  });
});
