// A tool context for unit tests of tools and the action step, outside a database-backed run.
import { Prisma, type Run } from "../../src/generated/prisma/client.js";
import type { Transact } from "../../src/domain/transaction.js";
import type { ToolContext } from "../../src/runtime/ports/tool.js";

export function testRun(overrides: Partial<Run> = {}): Run {
  const now = new Date();
  return {
    id: "run-1",
    ownerId: "development",
    conversationId: "conversation-1",
    workspaceId: null,
    scheduleId: null,
    fireTime: null,
    agent: "researcher",
    agentProfileId: null,
    question: "a question",
    status: "RUNNING",
    maxTurns: 10,
    tokenBudget: 100_000,
    deadlineSeconds: 600,
    deadlineAt: new Date(now.getTime() + 600_000),
    goalVersionId: null,
    goalVersionNo: null,
    goalStatement: null,
    configuration: {},
    answer: null,
    answerPartial: false,
    concludedEarly: false,
    stopMode: null,
    stopRequestedAt: null,
    stopRequestedBy: null,
    stopReason: null,
    maxCost: null,
    confirmCostAbove: null,
    failureReason: null,
    createdAt: now,
    startedAt: now,
    finishedAt: null,
    leaseOwner: null,
    leaseExpiresAt: null,
    attempt: 1,
    modelLabel: null,
    tokensUsed: 0,
    cost: new Prisma.Decimal(0),
    costUnpriced: false,
    checkpointRevisionSeen: null,
    priority: 0,
    pauseRequestedAt: null,
    pausedAt: null,
    tags: [],
    metadata: {},
    metadataPairs: [],
    continuesPublicationId: null,
    admittedByToken: null,
    admittedFor: null,
    tokenReadableWorkspaceIds: [],
    ...overrides,
  };
}

export function toolContext(overrides: Partial<ToolContext> = {}): ToolContext {
  const run = overrides.run ?? testRun();
  return {
    run,
    runId: run.id,
    toolCallId: "call-1",
    signal: new AbortController().signal,
    span: { id: "s", traceId: "t" },
    write: noDatabase,
    ...overrides,
  };
}

/** The `write` of a context without a database: a tool that writes fails the test loudly. */
export const noDatabase: Transact = () => Promise.reject(new Error("this test gives the tool no database to write to"));
