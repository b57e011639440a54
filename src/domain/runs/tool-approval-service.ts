// Human approval of tool calls. A run's attempt records an approval request in its own fenced
// transaction when the model calls a tool that needs one; the run then waits (WAITING, no lease
// held) until every request of it is decided. A decision — the run's owner's, or REJECT when the
// request expired — is one conditional UPDATE, so exactly one of concurrent decisions wins. The
// decision that leaves none of the run's requests open makes the run claimable again, in the same
// transaction, and announces it: whichever instance claims it next executes or declines the calls.
//
// Every transaction here locks the run row first, as an attempt's fenced writes and a
// cancellation do: two decisions of one run are serialised (each sees the other's), and a
// decision racing the attempt that is about to leave the run WAITING sees the run as that
// attempt left it. A person decides only while no attempt holds the run (WAITING, or PAUSED
// while it waited): during a turn, a tool of the run itself could be the one deciding, and no
// model output decides an approval (RunNotWaitingError; the request stays open).
//
// Every decision — the owner's, an expiry, or the rejection of a run's open requests when it is
// cancelled, reaches its deadline or ends — is recorded on its call's span as an APPROVAL_DECIDED
// event in the transaction that decides it, so the trace says what was decided, by whom and why
// the moment it is.
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import type { EventPublisher } from "../../events/topics.js";
import { publishTraceChanges, type TraceChange } from "../trace/trace-writes.js";
import { announceApplied, applyTransition } from "./apply-transition.js";
import { recordDecisionIn } from "./approval-decisions.js";
import { TRANSITIONS } from "./transitions.js";
import type { PrismaClient, ToolApproval } from "../../generated/prisma/client.js";
import type { RunStatus } from "../../generated/prisma/enums.js";
import { AlreadyDecidedError, NotFoundError, RunNotWaitingError, ValidationError } from "../errors.js";
import { toStored } from "../text/stored-text.js";
import { checkEditedArguments } from "./tool-arguments.js";
import type { Actor } from "../principal/principal-service.js";
import type { Tx } from "../transaction.js";
import type { RunAnnouncer } from "./run-announcer.js";
import { requireDirects, requireSpeaksTo, runReachFor } from "./run-direction.js";

export type ToolApprovalDecision = "APPROVE" | "REJECT" | "EDIT";

/** One approval request as stored. */
export type ToolApprovalRecord = ToolApproval;

/** What an attempt records when a call waits for a decision. */
export type NewApproval = {
  runId: string;
  messageId: string;
  toolCallId: string;
  toolName: string;
  /** COST_CONFIRMATION: whether the run may spend past its confirmCostAbove; a tool call by default. */
  kind?: "TOOL_CALL" | "COST_CONFIRMATION";
  arguments: string;
  /** The tool's input schema as stored text (JSON Schema): what an EDIT decision is checked against. */
  inputSchema: string | null;
  /** The MCP tool the call is for, `<server>/<tool as its server lists it>`; null for any other tool. */
  mcpTool?: string | null;
  /** The MCP tool's digest when the call was held (Tool.mcpDigest): what the person decides on. */
  mcpToolDigest?: string | null;
  spanId: string | null;
  requestedAt: Date;
  expiresAt: Date;
};

/**
 * `arguments`: with EDIT (and only with it), the JSON object the call runs with instead of the
 * model's. `approvalId`: the request the person saw; the decision then decides that one only.
 */
export type DecideInput = {
  runId: string;
  toolCallId: string;
  decision: ToolApprovalDecision;
  reason?: string | null;
  arguments?: unknown;
  approvalId?: string | null;
};

/** The reason an expired request is rejected with: the model is told it. */
export const EXPIRED_REASON = "no decision in time";

const REASON_MAX = 2_000;

/** The statuses a run's calls are decided in: no attempt holds it (WAITING, or PAUSED while it waited). */
const DECIDABLE: ReadonlySet<RunStatus> = new Set(["WAITING", "PAUSED"]);

/** How many runs with requests due one round of the expiry sweep takes. */
export const EXPIRY_RUNS_PER_ROUND = 100;
/** How many requests one expiry sweep decides at most (it finishes the run it is on): the next sweep goes on. */
export const EXPIRY_REQUESTS_PER_SWEEP = 1_000;
/** How long one expiry sweep takes up runs for (it finishes the run it is on, and takes one at least). */
export const EXPIRY_SWEEP_MS = 200;

/**
 * The runs with requests due ($1), each owner's in turn: every owner's run whose first request
 * expired first, then every owner's second, and so on; $2 of them. The owners in $3 (served since
 * every owner with requests due last was) come a turn later: a sweep that stopped in the middle of
 * a turn is continued by the next one, with the owners it had not come to.
 */
const DUE_RUNS = `SELECT run_id, owner_id FROM (
  SELECT due.run_id, run.owner_id, due.first_due,
    row_number() OVER (PARTITION BY run.owner_id ORDER BY due.first_due, due.run_id) + CASE WHEN run.owner_id = ANY($3::text[]) THEN 1 ELSE 0 END AS turn
  FROM (SELECT run_id, min(expires_at) AS first_due FROM tool_approval WHERE decision IS NULL AND expires_at <= $1::timestamptz GROUP BY run_id) due
  JOIN run ON run.id = due.run_id
) ranked ORDER BY turn, first_due, run_id LIMIT $2::int`;

type Decision = { decision: ToolApprovalDecision; decidedBy: string | null; reason: string | null; at: Date; editedArguments?: string | null };

export class ToolApprovalService {
  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      events: EventPublisher;
      announcer: RunAnnouncer;
      /** The clock a decision is checked against the request's expiry by (tests move it). */
      now?: () => Date;
      /** The expiry sweep's rounds and budgets (EXPIRY_RUNS_PER_ROUND, EXPIRY_REQUESTS_PER_SWEEP, EXPIRY_SWEEP_MS). */
      expiry?: { runsPerRound?: number; requestsPerSweep?: number; sweepMs?: number };
    },
  ) {}

  /** The owners the expiry sweeps took a run of since every owner with requests due last had one taken. */
  private readonly served = new Set<string>();

  /** Every approval request of a run (a handful), oldest first. */
  ofRun(runId: string): Promise<ToolApproval[]> {
    return this.deps.prisma.toolApproval.findMany({ where: { runId }, orderBy: [{ requestedAt: "asc" }, { id: "asc" }] });
  }

  /** Records a request, in the attempt's fenced transaction. */
  request(tx: Tx, approval: NewApproval): Promise<ToolApproval> {
    return tx.toolApproval.create({ data: approval });
  }

  /**
   * Marks an approved call as begun, in the attempt's fenced transaction, before it executes: a
   * call begun and never answered is dangling (it may have run), never executed a second time.
   */
  async markStarted(tx: Tx, id: string, at: Date): Promise<void> {
    await tx.toolApproval.update({ where: { id }, data: { startedAt: at } });
  }

  /**
   * The owner's decision on a call that waits; another principal's run is not found. A decision
   * that comes after the request expired finds it rejected ("no decision in time"), as the sweep
   * would have decided it: AlreadyDecidedError. EDIT arguments that do not fit the tool's input
   * schema are a ValidationError naming the field, and change nothing: the call still waits.
   * Named by `approvalId`, the decision takes that request or nothing: a request of another call
   * or run is not found, and one decided already is AlreadyDecidedError, even if the call has
   * another request open. An open request of a run that does not wait (RUNNING: an attempt holds
   * it, and its tools could be the ones deciding) is RunNotWaitingError, and stays open. An access
   * token EDITs only a call of a run that reads no more than it may (run-direction.ts;
   * ForbiddenError, nothing decided), and rejects with a reason only such a run's calls (the reason
   * is what the model reads next; an API key, only with the ADMIT scope steerRun needs); it approves, and rejects without a
   * reason, the calls of any run its grants cover.
   */
  async decide(actor: Actor, input: DecideInput): Promise<ToolApproval> {
    const reason = input.reason?.trim() || null;
    if (reason && reason.length > REASON_MAX) throw new ValidationError([{ field: "reason", message: `must be at most ${REASON_MAX} characters` }]);
    const edit = input.decision === "EDIT";
    if (edit && input.arguments == null) throw new ValidationError([{ field: "arguments", message: "EDIT needs the arguments the call runs with" }]);
    if (!edit && input.arguments != null) throw new ValidationError([{ field: "arguments", message: "only an EDIT decision takes arguments" }]);
    const after: AfterCommit = [];
    const now = this.deps.now?.() ?? new Date();
    const { approval: decided, late } = await this.deps.prisma.$transaction(async (tx) => {
      const run = await runReachFor(tx, input.runId, actor.principalId, "FOR NO KEY UPDATE");
      if (!run) throw new NotFoundError("Run", input.runId);
      // Edited arguments are the decider's own, and would run with the run's reach (run-direction.ts).
      const { reach } = run;
      if (edit) requireDirects(actor, reach, "edit a held call of");
      // A rejection's reason is the model's next input (approval-gate.ts declinedResult): words that
      // steer the run as much as steerRun's, so a token gives one only on a run it may direct.
      if (input.decision === "REJECT" && reason) requireSpeaksTo(actor, reach, "give a reason the model reads when rejecting a held call of");
      const approvals = await tx.toolApproval.findMany({ where: { runId: input.runId, toolCallId: input.toolCallId }, orderBy: { requestedAt: "desc" } });
      const named = input.approvalId == null ? null : approvals.find((approval) => approval.id === input.approvalId);
      if (named === undefined) throw new NotFoundError("ToolApproval", input.approvalId!);
      const open = named ? (named.decision === null ? named : undefined) : approvals.find((approval) => approval.decision === null);
      if (!open) {
        const decided = named ?? approvals[0];
        if (decided) throw new AlreadyDecidedError(decided);
        throw new NotFoundError("ToolApproval", input.toolCallId);
      }
      // While an attempt holds the run, a tool of its own could be deciding (one called in the same
      // reply, say, holding a key allowed to decide): no model output decides, so nothing does.
      if (!DECIDABLE.has(run.status)) throw new RunNotWaitingError(open, run.status);
      const late = open.expiresAt <= now;
      // Checked against the schema the call was held with, before anything is written.
      const editedArguments = !late && edit ? toStored(checkEditedArguments(input.arguments, open.inputSchema)) : null;
      const decision = late
        ? { decision: "REJECT" as const, decidedBy: null, reason: EXPIRED_REASON, at: now }
        : { decision: input.decision, decidedBy: actor.principalId, reason, at: now, editedArguments };
      const approval = await this.decideIn(tx, open.id, decision, after);
      if (!approval) throw new AlreadyDecidedError(await tx.toolApproval.findUniqueOrThrow({ where: { id: open.id } }));
      return { approval, late };
    });
    runAfterCommit(after);
    // The expiry was recorded (and the run resumed) all the same.
    if (late) throw new AlreadyDecidedError(decided);
    return decided;
  }

  /**
   * Rejects every request whose time ran out (as of `now`) with EXPIRED_REASON; returns how many.
   * A run's due requests are decided together, in one transaction under the run's lock; a run
   * whose lock is held (another instance's sweep, or a decision) is left to the next sweep, so
   * instances sweeping at once take different runs and neither waits for the other. Runs are taken
   * in rounds of EXPIRY_RUNS_PER_ROUND, each owner's oldest first in turn (every owner's first run,
   * then every owner's second...), until nothing is due, EXPIRY_REQUESTS_PER_SWEEP were decided or
   * EXPIRY_SWEEP_MS went by; the next sweep goes on with the owners whose turn this one did not
   * come to. However many requests one principal's runs let expire together, another's run
   * expiring with them resumes within two sweeps. Nothing due: one statement.
   */
  async expireDue(now: Date): Promise<number> {
    const { runsPerRound = EXPIRY_RUNS_PER_ROUND, requestsPerSweep = EXPIRY_REQUESTS_PER_SWEEP, sweepMs = EXPIRY_SWEEP_MS } = this.deps.expiry ?? {};
    const started = performance.now();
    let expired = 0;
    let taken = 0;
    for (;;) {
      const due = await this.deps.prisma.$queryRawUnsafe<{ run_id: string; owner_id: string }[]>(DUE_RUNS, now, runsPerRound, [...this.served]);
      // The first run is of an owner served already: every owner with requests due was, and the turns start again.
      if (due[0] && this.served.has(due[0].owner_id)) this.served.clear();
      const before = taken;
      for (const { run_id: runId, owner_id: ownerId } of due) {
        if (expired >= requestsPerSweep || (taken > 0 && performance.now() - started >= sweepMs)) return expired;
        const decided = await this.expireRun(runId, now);
        if (decided === null) continue;
        taken += 1;
        expired += decided;
        this.served.add(ownerId);
      }
      // A round whose every run was locked would find the same runs again: the next sweep does.
      if (due.length < runsPerRound || taken === before || expired >= requestsPerSweep) return expired;
    }
  }

  /** Decides a run's due requests, under its lock; null when another transaction holds the lock (nothing is decided). */
  private async expireRun(runId: string, now: Date): Promise<number | null> {
    const after: AfterCommit = [];
    const decided = await this.deps.prisma.$transaction(async (tx) => {
      const locked = await tx.$queryRawUnsafe<unknown[]>("SELECT 1 FROM run WHERE id = $1 FOR NO KEY UPDATE SKIP LOCKED", runId);
      if (locked.length === 0) return null;
      // Read under the run's lock: every decision takes it first, so none of these is decided meanwhile.
      const open = await tx.toolApproval.findMany({ where: { runId, decision: null, expiresAt: { lte: now } }, select: { id: true } });
      let decided = 0;
      for (const { id } of open) {
        if (await this.decideOneIn(tx, id, { decision: "REJECT", decidedBy: null, reason: EXPIRED_REASON, at: now }, after)) decided += 1;
      }
      if (decided > 0) await this.resumeIn(tx, runId, now, after);
      return decided;
    });
    runAfterCommit(after);
    return decided;
  }

  /** Decides one open request and, when it was the run's last open one, makes the run claimable again (the caller holds its lock). */
  private async decideIn(tx: Tx, id: string, decision: Decision, after: AfterCommit): Promise<ToolApproval | null> {
    const approval = await this.decideOneIn(tx, id, decision, after);
    if (approval) await this.resumeIn(tx, approval.runId, decision.at, after);
    return approval;
  }

  /** Decides one open request (the conditional UPDATE: null when it was decided already), on its call's span too. */
  private async decideOneIn(tx: Tx, id: string, decision: Decision, after: AfterCommit): Promise<ToolApproval | null> {
    const won = await tx.toolApproval.updateMany({
      where: { id, decision: null },
      data: {
        decision: decision.decision,
        decidedBy: decision.decidedBy,
        reason: decision.reason,
        decidedAt: decision.at,
        editedArguments: decision.editedArguments ?? null,
      },
    });
    if (won.count === 0) return null;
    const approval = await tx.toolApproval.findUniqueOrThrow({ where: { id } });
    const recorded = await recordDecisionIn(tx, approval);
    if (recorded) after.push(() => publishTraceChanges(this.deps.events, [recorded]));
    return approval;
  }

  /**
   * Makes the run claimable again once none of its requests is open and it is WAITING. Still
   * RUNNING and still holding its conversation's slot, under an expired lease and no worker: the
   * next claim resumes it, as it resumes a run handed back (the resume row).
   */
  private async resumeIn(tx: Tx, runId: string, at: Date, after: AfterCommit): Promise<void> {
    const run = await tx.run.findUniqueOrThrow({ where: { id: runId }, select: { id: true, ownerId: true, conversationId: true, workspaceId: true } });
    const resumed = await applyTransition(tx, TRANSITIONS.resume, run, { at, reason: "every request was decided", events: this.deps.events });
    if (resumed) {
      const announcers = {
        events: this.deps.events,
        trace: (changes: readonly (TraceChange | null)[]) => publishTraceChanges(this.deps.events, changes),
        runs: (ids: string[]) => void this.deps.announcer.announce(ids),
      };
      after.push(() => announceApplied(announcers, resumed));
    }
  }
}
