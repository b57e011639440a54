// Steering a run in flight (issue 38): a person's message to a queued, running or waiting run.
// The text is stored at once (run_input, PENDING) and enters the conversation's log exactly once,
// as a USER entry right before the run's next model request — in the attempt's fenced transaction
// that also marks it DELIVERED and records the STEERED trace event, so an attempt that lost its run
// delivers nothing and the attempt that takes over delivers what was not. When the run ends first,
// whatever row ends it releases its pending inputs (RELEASED) in the same transaction
// (apply-transition.ts), so a UI can send the text as the next run. A stored input is announced
// on the event bus after commit (run:changes): the worker executing the run may have read its
// requests before the input was stored — with its claim, for its first model request — and hears
// from the announcement that the next request delivers it.
//
// Every write here takes the run row's lock first (lock-order.ts): steerRun FOR SHARE (steers do
// not wait for each other), delivery and the run's end FOR NO KEY UPDATE (the fence, or the
// transition). A steer therefore commits either before the run's end — and is released by it — or
// after, and sees the run ended; and before a delivery — and is delivered by it — or after, and
// waits for the next model request.
import { z } from "zod";
import { type EventPublisher, publishRunSteered } from "../../events/topics.js";
import type { PrismaClient, RunInput } from "../../generated/prisma/client.js";
import { IdempotencyConflictError, NotFoundError, RunEndedError } from "../errors.js";
import { idempotencyScopeOf } from "../principal/idempotency-scope.js";
import type { Actor } from "../principal/principal-service.js";
import { appendEventsIn, type TraceChange } from "../trace/trace-writes.js";
import type { Tx } from "../transaction.js";
import { nonBlank, parseInput } from "../validation.js";
import { GOAL_STATEMENT_MAX } from "../workspace/workspace-service.js";
import { requireDirects, runReachFor } from "./run-direction.js";
import type { RunStatusName, SpanRef } from "./vocabulary.js";
import { isTerminal } from "./stop-reasons.js";

/** A steering text is a person's message, held to a run's question's rules. */
export const STEER_TEXT_MAX = GOAL_STATEMENT_MAX;

const steerInput = z.object({
  runId: z.string(),
  text: nonBlank(STEER_TEXT_MAX),
  idempotencyKey: z.string().trim().min(1, "must not be empty").max(200, "must be at most 200 characters").nullish(),
});

export type SteerInput = z.input<typeof steerInput>;

const isUniqueViolation = (error: unknown) => {
  const e = error as { code?: string; message?: string };
  return e?.code === "P2002" || /unique constraint/i.test(e?.message ?? "");
};

export class SteeringService {
  constructor(private readonly deps: { prisma: PrismaClient; events: EventPublisher }) {}

  /**
   * Stores a steering input of one of the actor's runs that has not ended; with a key used before,
   * returns that input. An access token steers only a run that reads no more than it may
   * (run-direction.ts; ForbiddenError otherwise).
   */
  async steerRun(actor: Actor, input: SteerInput): Promise<RunInput> {
    const { runId, text, idempotencyKey: key } = parseInput(steerInput, input);
    // An access token's keys are its grants' own: another end user's token on the run may use the same key.
    const scope = idempotencyScopeOf(actor);
    try {
      const { input: stored, status } = await this.deps.prisma.$transaction(async (tx): Promise<{ input: RunInput; status?: RunStatusName }> => {
        const run = await runReachFor(tx, runId, actor.principalId, "FOR SHARE");
        if (!run) throw new NotFoundError("Run", runId);
        // The message would direct a run that reads with more than the token may (run-direction.ts).
        requireDirects(actor, run.reach, "steer");
        const replayed = key ? await replay(tx, { runId, scope, key, text }) : null;
        if (replayed) return { input: replayed };
        if (isTerminal(run.status)) throw new RunEndedError(await tx.run.findUniqueOrThrow({ where: { id: runId } }));
        return { input: await tx.runInput.create({ data: { runId, text, idempotencyScope: scope, idempotencyKey: key ?? null } }), status: run.status };
      });
      // Committed: the worker executing the run hears of it (an input replayed was announced when stored).
      if (status) publishRunSteered(this.deps.events, runId, status);
      return stored;
    } catch (error) {
      // The same key sent twice at once: the first committed, this one answers as it did.
      if (!key || !isUniqueViolation(error)) throw error;
      const replayed = await replay(this.deps.prisma, { runId, scope, key, text });
      if (!replayed) throw error;
      return replayed;
    }
  }
}

/** The input stored under the scope's key, if any; IdempotencyConflictError when it holds another text. */
async function replay(
  db: Pick<Tx, "runInput">,
  { runId, scope, key, text }: { runId: string; scope: string; key: string; text: string },
): Promise<RunInput | null> {
  const stored = await db.runInput.findUnique({ where: { runId_idempotencyScope_idempotencyKey: { runId, idempotencyScope: scope, idempotencyKey: key } } });
  if (stored && stored.text !== text) throw new IdempotencyConflictError(key);
  return stored;
}

/** A log entry as delivery needs it back: its id and its content. */
export type DeliveredEntry = { id: string; content: string };

/**
 * Delivers the run's pending inputs, oldest first, inside the caller's fenced transaction (which
 * holds the run row): `append` writes them to the log as USER entries in that transaction; each is
 * marked DELIVERED with its entry, and a STEERED event on `span` refers to the entry. Returns the
 * trace changes to announce after commit (none when nothing was pending).
 */
export async function deliverInputsIn(
  tx: Tx,
  { runId, span, at, append }: { runId: string; span: SpanRef; at: Date; append: (texts: string[]) => Promise<DeliveredEntry[]> },
): Promise<TraceChange[]> {
  const pending = await tx.$queryRawUnsafe<{ id: string; text: string }[]>(
    "SELECT id, text FROM run_input WHERE run_id = $1 AND status = 'PENDING' ORDER BY created_at, id FOR UPDATE",
    runId,
  );
  if (pending.length === 0) return [];
  const entries = await append(pending.map((input) => input.text));
  for (const [index, input] of pending.entries()) {
    const entry = entries[index]!;
    const marked = await tx.runInput.updateMany({
      where: { id: input.id, status: "PENDING" },
      data: { status: "DELIVERED", deliveredAt: at, messageId: entry.id },
    });
    // The row was locked above: nothing else can have changed it.
    if (marked.count !== 1) throw new Error(`steering input ${input.id} changed while it was being delivered`);
  }
  const events = entries.map((entry) => ({ spanId: span.id, kind: "STEERED" as const, payload: entry.content, messageId: entry.id, at }));
  return (await appendEventsIn(tx, span.traceId, events)) ?? [];
}

/** The run has ended: its inputs still pending never enter the log (in the transaction that ends it). */
export async function releaseInputsIn(tx: Tx, runId: string, at: Date): Promise<void> {
  await tx.runInput.updateMany({ where: { runId, status: "PENDING" }, data: { status: "RELEASED", releasedAt: at } });
}
