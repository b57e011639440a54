// Run admission (W4, W5, R0): a new, independent run with its own limits and principal, its
// goal version, materials and configuration frozen, idempotent per principal and key (an access
// token's keys within its grants' scope: idempotency-scope.ts). What a
// request may say, its defaults and its fingerprint are in admission-request.ts.
import { randomUUID } from "node:crypto";
import { type EventPublisher, publishRunListChange } from "../../events/topics.js";
import type { Prisma, PrismaClient, Run } from "../../generated/prisma/client.js";
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import type { AgentProfileVersions } from "../capabilities/agent-profile-versions.js";
import { ConversationBusyError, IdempotencyConflictError, NotFoundError, ValidationError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { shareOpenWorkspace } from "../workspace/link-service.js";
import { admittedReach, reachOf, withinReach } from "../workspace/material-reach.js";
import { findOpenWorkspace, publishWorkspaceEvent } from "../workspace/workspace-access.js";
import { type Admission, type AdmitInput, distinct, fingerprintOf, type MultitaskStrategy } from "./admission-request.js";
import { parseAdmission } from "./capped-admission.js";
import { admitInOneStatement } from "./admit-in-one-statement.js";
import { type AdmittedRelations, includeOf } from "./admitted-run-relations.js";
import { metadataPairs } from "./run-labels.js";
import type { RunAnnouncer } from "./run-announcer.js";
import { assertKeyMayInterrupt, assertMayInterrupt } from "./interrupt-rights.js";
import { cancelIn } from "./run-service.js";
import { holdQueuePlace, MAX_QUEUED_RUNS_DEFAULT, queueFull } from "./queue-gate.js";
import { idempotencyScopeOf } from "../principal/idempotency-scope.js";
import { assertOwned, findOwnedVersions } from "../research/owned-objects.js";
import { conversationTitle } from "../text/whole-characters.js";

/** Idempotency keys are honoured for at least this long (W5). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** Where a scheduled run comes from, written on the run (Run.schedule, Run.fireTime). */
export type RunOrigin = { scheduleId: string; fireTime: Date };

function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return e?.code === "P2002" || /unique constraint/i.test(e?.message ?? "");
}

export class AdmissionService {
  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      events: EventPublisher;
      /** Tells the workers that an admitted run is ready (after its commit). */
      announcer: RunAnnouncer;
      /** The agent profiles runs may be admitted under, and the version of each a run executes. */
      profiles: AgentProfileVersions;
      /** The most runs one principal may have QUEUED (MAX_QUEUED_RUNS_PER_PRINCIPAL; queue-gate.ts). */
      maxQueuedRuns?: number;
      now?: () => Date;
    },
  ) {}

  private get maxQueuedRuns(): number {
    return this.deps.maxQueuedRuns ?? MAX_QUEUED_RUNS_DEFAULT;
  }

  /**
   * Admits a run, within the run caps of the actor's key or token (capped-admission.ts). `relations`: what the caller's answer reads of the run's relations, given back on
   * the run when the admission is the one statement (a plain admission), and not read otherwise.
   */
  async admitRun(actor: Actor, input: AdmitInput, relations?: AdmittedRelations): Promise<{ run: Run; replayed: boolean }> {
    const request = parseAdmission(input, actor.runCaps);
    if (request.multitask === "INTERRUPT") assertKeyMayInterrupt(actor);
    const profile = await this.profileOf(request.agent);
    const fingerprint = fingerprintOf(request);
    const key = request.idempotencyKey;
    // An access token's materials are checked against its grants by the transactional admission.
    const narrowed = actor.access !== undefined && (request.materials.length > 0 || Boolean(request.continuesPublicationId));
    if (!request.conversationId && !narrowed) {
      const now = this.deps.now?.() ?? new Date();
      const outcome = await admitInOneStatement(this.deps.prisma, {
        ownerId: actor.principalId,
        runId: randomUUID(),
        workspaceId: request.workspaceId ?? null,
        agent: request.agent,
        agentProfileId: profile.id,
        question: request.question,
        limits: request.limits,
        priority: request.priority,
        tags: request.tags,
        metadata: request.metadata,
        materials: distinct(request.materials),
        continuesPublicationId: request.continuesPublicationId ?? null,
        ...admittedReach(actor),
        idempotency: key ? { scope: idempotencyScopeOf(actor), key, fingerprint, expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) } : null,
        maxQueuedRuns: this.maxQueuedRuns,
        now,
        relations,
      });
      if (outcome.kind === "admitted") return { run: this.announce(outcome.run), replayed: false };
      if (outcome.kind === "key-taken" || (outcome.kind === "queue-full" && key)) {
        const replay = await this.replay(actor, key!, fingerprint, relations);
        if (replay) return replay;
      }
      // A full queue refuses the run; a retry of an admission that committed was answered above.
      if (outcome.kind === "queue-full") throw queueFull(this.maxQueuedRuns, actor.access !== undefined, outcome.tokensQueued, outcome.endUserFull);
      // Otherwise the transaction below says what is missing, or admits after a restore or expiry.
    } else if (key) {
      const replay = await this.replay(actor, key, fingerprint, relations);
      if (replay) return replay;
    }
    try {
      const after: AfterCommit = [];
      const run = await this.deps.prisma.$transaction((tx) => this.admit(tx, { actor, request, agentProfileId: profile.id, fingerprint }, after));
      runAfterCommit(after);
      return { run: this.announce(run), replayed: false };
    } catch (error) {
      // Another admission with the same key committed first: answer as that one did.
      if (key && isUniqueViolation(error)) {
        const replay = await this.replay(actor, key, fingerprint, relations);
        if (replay) return replay;
      }
      throw error;
    }
  }

  /**
   * Admits a run inside the caller's transaction, committed with whatever else it writes (a
   * schedule's fire and its record): the request takes the transactional path (its conversation's
   * multitask strategy, its idempotency key claimed), and the run is announced after the commit.
   */
  async admitIn(tx: Prisma.TransactionClient, actor: Actor, input: AdmitInput, origin: RunOrigin, after: AfterCommit): Promise<Run> {
    const request = parseAdmission(input, actor.runCaps);
    const profile = await this.profileOf(request.agent);
    const run = await this.admit(tx, { actor, request, agentProfileId: profile.id, fingerprint: fingerprintOf(request), origin }, after);
    after.push(() => this.announce(run));
    return run;
  }

  /** The agent profile version a run of `agent` executes; a ValidationError for a name no profile has. */
  private profileOf(agent: string) {
    const { names } = this.deps.profiles;
    if (!names.has(agent)) {
      throw new ValidationError([{ field: "agent", message: `is not an agent profile; known: ${[...names].sort().join(", ")}` }]);
    }
    // Resolved once per instance (at start): no statement of its own here.
    return this.deps.profiles.current(agent);
  }

  /** After the commit: the workspace's subscribers see the new link and run, a worker the queued run. */
  private announce(run: Run): Run {
    if (run.workspaceId) {
      publishWorkspaceEvent(this.deps.events, { kind: "LINKED", workspaceId: run.workspaceId, link: { kind: "RUN", targetId: run.id } });
      publishWorkspaceEvent(this.deps.events, { kind: "RUN_ADMITTED", workspaceId: run.workspaceId, runId: run.id });
    }
    publishRunListChange(this.deps.events, run.ownerId);
    // Not awaited: the run is admitted whether or not its announcement gets through.
    void this.deps.announcer.announce([run.id]);
    return run;
  }

  /** The run an earlier admission with the key admitted, with `relations` (as an admission gives them back), or null when the key is free. */
  private async replay(actor: Actor, key: string, fingerprint: string, relations: AdmittedRelations = {}): Promise<{ run: Run; replayed: true } | null> {
    const now = this.deps.now?.() ?? new Date();
    const stored = await this.deps.prisma.idempotencyKey.findUnique({
      where: { principalId_scope_key: { principalId: actor.principalId, scope: idempotencyScopeOf(actor), key } },
    });
    if (!stored || stored.expiresAt <= now) return null;
    if (stored.fingerprint !== fingerprint) throw new IdempotencyConflictError(key);
    return { run: await this.deps.prisma.run.findUniqueOrThrow({ where: { id: stored.runId }, include: includeOf(relations) }), replayed: true };
  }

  private async admit(
    tx: Prisma.TransactionClient,
    {
      actor,
      request,
      agentProfileId,
      fingerprint,
      origin,
    }: { actor: Actor; request: Admission; agentProfileId: string; fingerprint: string; origin?: RunOrigin },
    after: AfterCommit,
  ): Promise<Run> {
    const now = this.deps.now?.() ?? new Date();
    const runId = randomUUID();
    if (request.idempotencyKey)
      await claimKey(tx, { principalId: actor.principalId, scope: idempotencyScopeOf(actor), key: request.idempotencyKey, fingerprint, runId, now });
    // Before the workspace is locked: cancelling a run locks it, and a settling run locks its
    // run row before its workspace. Taking locks in that order too never deadlocks with it.
    if (request.conversationId) await this.makeRoom(tx, { actor, conversationId: request.conversationId, strategy: request.multitask, runId }, after);
    const goal = request.workspaceId ? await frozenGoal(tx, actor, request.workspaceId) : null;
    // An access token reaches only the publications of the histories it may READ: any other is
    // refused as a missing one is, so its answer tells nothing of what exists outside them.
    const named = [...request.materials.map((m) => m.publicationId), ...(request.continuesPublicationId ? [request.continuesPublicationId] : [])];
    const within = actor.access && named.length > 0 ? await withinReach(tx, actor.principalId, reachOf(actor), named) : undefined;
    const materials = await findOwnedVersions(tx, actor, distinct(request.materials), within);
    if (request.continuesPublicationId) {
      await assertOwned(tx, actor, "PUBLICATION", request.continuesPublicationId);
      if (within && !within.has(request.continuesPublicationId)) throw new NotFoundError("Publication", request.continuesPublicationId);
    }
    // Last before the writes: the run rows an interruption cancels are locked before it (queue-gate.ts).
    await holdQueuePlace(tx, actor.principalId, this.maxQueuedRuns, actor.access !== undefined, admittedReach(actor).admittedFor);
    const conversationId =
      request.conversationId ??
      (await tx.conversation.create({ data: { ownerId: actor.principalId, title: conversationTitle(request.question) }, select: { id: true } })).id;

    const run = await tx.run.create({
      data: {
        id: runId,
        ownerId: actor.principalId,
        conversationId,
        workspaceId: request.workspaceId ?? null,
        agent: request.agent,
        agentProfileId,
        question: request.question,
        ...request.limits,
        priority: request.priority,
        tags: request.tags,
        metadata: request.metadata,
        metadataPairs: metadataPairs(request.metadata),
        scheduleId: origin?.scheduleId ?? null,
        fireTime: origin?.fireTime ?? null,
        continuesPublicationId: request.continuesPublicationId ?? null,
        ...admittedReach(actor),
        createdAt: now,
        deadlineAt: new Date(now.getTime() + request.limits.deadlineSeconds * 1000),
        goalVersionId: goal?.id ?? null,
        goalVersionNo: goal?.version ?? null,
        goalStatement: goal?.statement ?? null,
        configuration: { agent: request.agent, limits: request.limits },
        // Without materials, no nested write: the insert alone returns the run.
        ...(materials.length ? { materials: { create: materials.map((m, position) => ({ publicationVersionId: m.id, position })) } } : {}),
      },
    });
    // The question enters the conversation's log when the run starts (domain/runs/claim.ts):
    // a run queued behind another must not show up in the middle of that run's turns. The run
    // is new, so is its link: a plain insert.
    if (request.workspaceId)
      await tx.workspaceLink.create({ data: { workspaceId: request.workspaceId, targetKind: "RUN", targetId: runId }, select: { id: true } });
    return run;
  }

  /**
   * One active run per conversation (R19). Admissions into one conversation take its lock in
   * turn; a queued, running, waiting or paused run there is refused (REJECT), waited for (ENQUEUE: the worker
   * starts the new run once the conversation is free) or cancelled (INTERRUPT: every queued,
   * running, waiting and paused run of the conversation; the new run starts once the running one has stopped).
   */
  private async makeRoom(
    tx: Prisma.TransactionClient,
    { actor, conversationId, strategy, runId }: { actor: Actor; conversationId: string; strategy: MultitaskStrategy; runId: string },
    after: AfterCommit,
  ): Promise<void> {
    await assertOwned(tx, actor, "CONVERSATION", conversationId);
    await tx.$executeRawUnsafe("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", `conversation:${conversationId}`);
    const active = await tx.run.findMany({
      where: { conversationId, status: { in: ["QUEUED", "RUNNING", "WAITING", "PAUSED"] } },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    });
    if (active.length === 0 || strategy === "ENQUEUE") return;
    if (strategy === "REJECT") throw new ConversationBusyError(conversationId, active.find((run) => run.status !== "QUEUED") ?? active[0]!);
    assertMayInterrupt(actor, active);
    // Every run it cancels locked first, in id order (lock-order.ts): a cancelled queued run's count
    // takes its principal's queue row, which a claim or a resume of another of them takes after its run row.
    if (active.length > 1) {
      await tx.$queryRawUnsafe(
        "SELECT id FROM run WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE",
        active.map((run) => run.id),
      );
    }
    for (const run of active) {
      await cancelIn(tx, { runId: run.id, events: this.deps.events, reason: `interrupted: run ${runId} was admitted to replace it` }, after);
    }
  }
}

/** Claims an idempotency key for the run, first: a concurrent admission with the same key waits here, then fails. */
async function claimKey(
  tx: Prisma.TransactionClient,
  { principalId, scope, key, fingerprint, runId, now }: { principalId: string; scope: string; key: string; fingerprint: string; runId: string; now: Date },
): Promise<void> {
  await tx.idempotencyKey.deleteMany({ where: { principalId, scope, key, expiresAt: { lte: now } } });
  await tx.idempotencyKey.create({ data: { principalId, scope, key, fingerprint, runId, expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) } });
}

/**
 * The workspace's current goal, which the run freezes, with the workspace held open. Shared:
 * admissions into one workspace do not wait for each other, only for (and block) a goal update,
 * archive or delete, so the frozen goal is the current one when the run commits.
 */
async function frozenGoal(tx: Prisma.TransactionClient, actor: Actor, workspaceId: string): Promise<{ id: string; version: number; statement: string }> {
  let shared = await shareOpenWorkspace(tx, actor, workspaceId);
  if (!shared) {
    // Not open: findOpenWorkspace throws the typed error that says why (not found, archived).
    // If it finds the workspace open, a restore committed in between: hold it now.
    await findOpenWorkspace(tx, actor, workspaceId);
    shared = await shareOpenWorkspace(tx, actor, workspaceId);
    if (!shared) throw new Error(`workspace ${workspaceId} changed state twice during one admission`);
  }
  return shared.goal;
}
