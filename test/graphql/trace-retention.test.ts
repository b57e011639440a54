// Trace retention through the API with a fake clock, on both databases: policies (the operator's
// default, a workspace's), each pin kind, unpinning restarting the clock, what an expired trace
// reads as (TraceExpiredError, the KEEP_SUMMARY skeleton), and a subscription to one.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PinTraceDocument, SetRetentionPolicyDocument, TraceRetentionDocument, UnpinTraceDocument } from "../../sdk/generated/graphql.js";
import { decodeGlobalId, encodeGlobalId } from "../../src/domain/global-id.js";
import { traceUpdates } from "../../src/trace/updates/trace-updates.js";
import { backends } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { seedEndedRun, seedOwner, traceRows } from "../support/trace-retention-seed.js";

const DAY = 86_400_000;
const ended = new Date("2026-06-01T12:00:00.000Z");
const day = (n: number) => new Date(ended.getTime() + n * DAY);

describe.each(backends)("trace retention through the API (%s)", (backend) => {
  let t: TestApp;
  let clock = ended;
  beforeEach(async () => {
    clock = ended;
    t = await startTestApp(backend, { now: () => clock, retention: { days: 7, mode: "DELETE", sweep: { rowsPerBatch: 3, tracesPerBatch: 2 } } });
  });
  afterEach(() => t.close());

  const prisma = () => t.app.db.prisma;
  const sweep = async (at: Date) => {
    clock = at;
    return (await t.app.services.retention.sweep()).expired;
  };
  const read = async (runId: string) => {
    const node = (await t.client.request(TraceRetentionDocument, { runId: encodeGlobalId("Run", runId) })).node;
    return expectType(node!, "Run").trace!;
  };

  it("unpinned traces expire on time under the operator's and a workspace's policy; an expired trace reads as TraceExpiredError, its skeleton kept under KEEP_SUMMARY; a subscription to it completes at once", async () => {
    const owner = await seedOwner(prisma(), "development");
    const workspace = await createWorkspace(t.client);
    const policy = await t.client.request(SetRetentionPolicyDocument, { input: { workspaceId: workspace.id, days: 3, mode: "KEEP_SUMMARY" } });
    expect(expectType(policy.setRetentionPolicy, "SetRetentionPolicySuccess").policy).toMatchObject({ days: 3, mode: "KEEP_SUMMARY" });
    const plain = await seedEndedRun(prisma(), owner, { endedAt: ended });
    const summarised = await seedEndedRun(prisma(), owner, { endedAt: ended, workspaceId: decodeGlobalId(workspace.id)!.id });
    const spansBefore = await prisma().span.findMany({ where: { traceId: summarised.traceId }, orderBy: [{ startedAt: "asc" }, { id: "asc" }] });

    expect(expectType(await read(plain.runId), "Trace").expiresAt).toBe(day(7).toISOString());
    expect(expectType(await read(summarised.runId), "Trace").expiresAt).toBe(day(3).toISOString());

    expect(await sweep(day(2.99))).toBe(0);
    expect(await sweep(day(3))).toBe(1);
    const expired = expectType(await read(summarised.runId), "TraceExpiredError");
    expect(expired).toMatchObject({ runId: encodeGlobalId("Run", summarised.runId), expiredAt: day(3).toISOString(), mode: "KEEP_SUMMARY" });
    expect(expired.message).toContain("expired on");
    const skeleton = expired.summary!.spans.edges.map(({ node }) => node);
    expect(skeleton).toEqual(
      spansBefore.map((span) => ({
        kind: span.kind,
        name: span.name,
        status: span.status,
        startedAt: span.startedAt.toISOString(),
        endedAt: span.endedAt?.toISOString() ?? null,
        attributes: "{}",
        usage: span.usage ? { input: 50, output: 10 } : null,
      })),
    );
    expect(await traceRows(prisma(), summarised.traceId)).toEqual({ spans: 3, events: 0, changes: 0 });
    expect(expectType(await read(plain.runId), "Trace").expiresAt).toBe(day(7).toISOString());

    expect(await sweep(day(7))).toBe(1);
    const deleted = expectType(await read(plain.runId), "TraceExpiredError");
    expect(deleted).toMatchObject({ mode: "DELETE", summary: null, expiredAt: day(7).toISOString() });
    if (backend === "postgres") {
      // Expired on time, but its rows go with their week's partition: row by row only a week later.
      expect((await traceRows(prisma(), plain.traceId)).spans).toBeGreaterThan(0);
      expect(await sweep(day(14))).toBe(0);
    }
    expect(await traceRows(prisma(), plain.traceId)).toEqual({ spans: 0, events: 0, changes: 0 });

    // The run, its answer and its log entry are untouched.
    const run = await prisma().run.findUniqueOrThrow({ where: { id: plain.runId }, include: { messages: true } });
    expect(run).toMatchObject({ status: "SUCCEEDED", answer: "Forty.", tokensUsed: 120 });
    expect(run.messages.map((message) => message.id)).toEqual([plain.messageId]);

    // A subscription to an expired trace completes at once, saying why.
    const updates = [];
    for await (const update of traceUpdates({ prisma: prisma(), events: t.app.events, traceId: plain.traceId, afterSeq: 0, bufferLimit: 10 }))
      updates.push(update);
    expect(updates).toMatchObject([{ type: "TRACE_EXPIRED", at: day(7), mode: "DELETE" }]);

    // Nor can it be pinned any more.
    const pin = await t.client.request(PinTraceDocument, { input: { runId: encodeGlobalId("Run", plain.runId), reason: "too late" } });
    expect(pin.pinTrace.__typename).toBe("TraceExpiredError");
  });

  it("each pin kind keeps its trace (a model's score does not); unpinning restarts the clock from then", async () => {
    const owner = await seedOwner(prisma(), "development");
    const runs = {
      explicit: await seedEndedRun(prisma(), owner, { endedAt: ended }),
      publication: await seedEndedRun(prisma(), owner, { endedAt: ended }),
      checkpoint: await seedEndedRun(prisma(), owner, { endedAt: ended }),
      approval: await seedEndedRun(prisma(), owner, { endedAt: ended }),
      score: await seedEndedRun(prisma(), owner, { endedAt: ended }),
      modelScore: await seedEndedRun(prisma(), owner, { endedAt: ended }),
      none: await seedEndedRun(prisma(), owner, { endedAt: ended }),
    };
    const pinned = await t.client.request(PinTraceDocument, { input: { runId: encodeGlobalId("Run", runs.explicit.runId), reason: "evidence for the audit" } });
    expect(expectType(pinned.pinTrace, "PinTraceSuccess").trace).toMatchObject({
      expiresAt: null,
      pins: [{ kind: "EXPLICIT", reason: "evidence for the audit" }],
    });
    const publication = await prisma().publication.create({ data: { ownerId: owner.principalId, title: "Cells", latestVersion: 1 } });
    await prisma().publicationVersion.create({
      data: { publicationId: publication.id, version: 1, content: "Forty.", contentHash: "x", asOf: ended, originRunId: runs.publication.runId },
    });
    const workspace = await prisma().workspace.create({ data: { ownerId: owner.principalId, title: "W", goalVersion: 1 } });
    await prisma().checkpointVersion.create({
      data: {
        workspaceId: workspace.id,
        revision: 1,
        nextSteps: [],
        questions: [],
        origin: "MODEL_SUGGESTION",
        authorId: owner.principalId,
        originRunId: runs.checkpoint.runId,
      },
    });
    await prisma().toolApproval.create({
      data: {
        runId: runs.approval.runId,
        messageId: runs.approval.messageId,
        toolCallId: "call-1",
        toolName: "run_command",
        arguments: "{}",
        requestedAt: ended,
        expiresAt: day(1),
        decision: "APPROVE",
        decidedBy: owner.principalId,
        decidedAt: ended,
      },
    });
    const config = await prisma().scoreConfig.create({ data: { ownerId: owner.principalId, name: "useful", kind: "BOOLEAN", categories: [] } });
    const score = (targetKind: "RUN" | "SPAN", targetId: string, source: "HUMAN" | "MODEL") =>
      prisma().score.create({
        data: { ownerId: owner.principalId, configId: config.id, targetKind, targetId, value: 1, source, createdById: owner.principalId },
      });
    await score("SPAN", runs.score.spanIds[1]!, "HUMAN");
    await score("RUN", runs.modelScore.runId, "MODEL");

    const kinds = async (name: keyof typeof runs) => expectType(await read(runs[name].runId), "Trace").pins.map((pin) => pin.kind);
    expect(await kinds("publication")).toEqual(["PUBLICATION"]);
    expect(await kinds("checkpoint")).toEqual(["CHECKPOINT"]);
    expect(await kinds("approval")).toEqual(["APPROVAL"]);
    expect(await kinds("score")).toEqual(["SCORE"]);
    expect(await kinds("modelScore")).toEqual([]);

    expect(await sweep(day(30))).toBe(2);
    for (const name of ["explicit", "publication", "checkpoint", "approval", "score"] as const) {
      expect((await read(runs[name].runId)).__typename, name).toBe("Trace");
      expect(await traceRows(prisma(), runs[name].traceId), name).toEqual({ spans: 3, events: 4, changes: 7 });
    }
    expect((await read(runs.none.runId)).__typename).toBe("TraceExpiredError");
    expect((await read(runs.modelScore.runId)).__typename).toBe("TraceExpiredError");

    // Unpinned on day 30: its 7 days run from then, not from its end a month ago.
    clock = day(30);
    const unpinned = await t.client.request(UnpinTraceDocument, { input: { runId: encodeGlobalId("Run", runs.explicit.runId) } });
    expect(expectType(unpinned.unpinTrace, "PinTraceSuccess").trace).toMatchObject({ pins: [], expiresAt: day(37).toISOString() });
    expect(await sweep(day(36.9))).toBe(0);
    expect(await sweep(day(37))).toBe(1);
    expect((await read(runs.explicit.runId)).__typename).toBe("TraceExpiredError");
  });
});
