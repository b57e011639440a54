// What webhooks report, recorded in the transaction of the change itself (issue 22): a run
// settling, cancelled or timing out, a run beginning to wait for decisions, a checkpoint revision,
// a publication version, a workspace archived or deleted, a score (issue 39), a schedule that paused itself (issue 41). One INSERT … SELECT writes a pending
// message for every enabled webhook of the object's owner that listens for the type, so the event
// commits — or rolls back — with the change: a process killed right after the commit loses
// nothing, because delivery starts from these rows (the outbox), never from memory.
import { randomUUID } from "node:crypto";
import type { EventPublisher } from "../../events/topics.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { AfterCommit } from "../after-commit.js";
import { COST_CURRENCY, toDecimal } from "../costs/pricing.js";
import { encodeGlobalId } from "../global-id.js";

export const WEBHOOK_EVENT_TYPES = [
  "RUN_SUCCEEDED",
  "RUN_FAILED",
  "RUN_CANCELLED",
  "RUN_TIMED_OUT",
  "RUN_WAITING",
  "RUN_PAUSED",
  "RUN_RESUMED",
  "CHECKPOINT_UPDATED",
  "PUBLICATION_VERSION_CREATED",
  "WORKSPACE_ARCHIVED",
  "WORKSPACE_DELETED",
  "SCORE_CREATED",
  "SCHEDULE_PAUSED",
] as const;

export type WebhookEventTypeName = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The body's `data`: global ids and a one-line summary, never a run's answer, a checkpoint's or a publication's text. */
export type WebhookEventData = Record<string, string | number | boolean | null | WebhookMoney> & { summary: string };

/** An amount of money in a body (Money in the API): a decimal string, never a float. */
export type WebhookMoney = { amount: string; currency: string };

/** The event a webhook receives: the Standard Webhooks body (`type`, `timestamp`, `data`). */
export type WebhookEventBody = { type: WebhookEventTypeName; timestamp: string; data: WebhookEventData };

/** Where to say, after the commit, that events wait: the deliverers wake at once instead of at their next poll. */
export type WebhookWake = { events: EventPublisher; after: AfterCommit };

/**
 * Records one event about an object `ownerId` owns, inside the caller's transaction, for each of
 * the owner's enabled webhooks that listen for `type` (none: nothing is written). The event id
 * (`msg_…`, the webhook-id header) is the same for all of them.
 */
export async function recordWebhookEvent(
  tx: Prisma.TransactionClient,
  { ownerId, type, data, at = new Date() }: { ownerId: string; type: WebhookEventTypeName; data: WebhookEventData; at?: Date },
  wake?: WebhookWake,
): Promise<void> {
  const body: WebhookEventBody = { type, timestamp: at.toISOString(), data };
  const written = await tx.$executeRawUnsafe(
    `INSERT INTO webhook_message (id, webhook_id, event_id, type, body, status, attempts, next_attempt_at, created_at)
     SELECT gen_random_uuid()::text, w.id, $3, $2::"WebhookEventType", $4, 'PENDING', 0, now(), now()
       FROM webhook w WHERE w.owner_id = $1 AND w.enabled AND $2::"WebhookEventType" = ANY (w.events)`,
    ownerId,
    type,
    `msg_${randomUUID().replaceAll("-", "")}`,
    JSON.stringify(body),
  );
  if (written > 0 && wake) wake.after.push(() => wake.events.publish("webhook:pending", { at: new Date().toISOString() }));
}

const RUN_EVENTS = {
  SUCCEEDED: "RUN_SUCCEEDED",
  FAILED: "RUN_FAILED",
  CANCELLED: "RUN_CANCELLED",
  TIMED_OUT: "RUN_TIMED_OUT",
  WAITING: "RUN_WAITING",
  PAUSED: "RUN_PAUSED",
} as const;

const RUN_SUMMARIES = {
  RUN_SUCCEEDED: "the run succeeded",
  RUN_FAILED: "the run failed",
  RUN_CANCELLED: "the run was cancelled",
  RUN_TIMED_OUT: "the run reached its deadline",
  RUN_WAITING: "the run waits for a decision on a tool call",
  RUN_PAUSED: "the run was paused",
  RUN_RESUMED: "the run was resumed",
} as const;

/** The statuses of a run that has ended: their events carry what it cost. */
const ENDED_STATUSES: ReadonlySet<string> = new Set(["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"]);

/** An ended run's cost as its webhook body says it, read in the transaction that ends it (after its last span was charged). */
async function endedRunCost(tx: Prisma.TransactionClient, runId: string): Promise<{ cost: WebhookMoney; costUnpriced: boolean } | Record<string, never>> {
  const run = await tx.run.findUnique({ where: { id: runId }, select: { cost: true, costUnpriced: true } });
  return run ? { cost: { amount: toDecimal(run.cost).toFixed(), currency: COST_CURRENCY }, costUnpriced: run.costUnpriced } : {};
}

/**
 * Records the run's new status (terminal, WAITING or PAUSED) for its owner's webhooks; other
 * statuses report nothing — unless `as` names the event (RUN_RESUMED, with the status it resumed in).
 * `at`: the event's timestamp (a transition's: the time its run row records), now without it.
 */
export async function recordRunEvent(
  tx: Prisma.TransactionClient,
  run: { id: string; ownerId: string; workspaceId: string | null; conversationId: string; failureReason?: string | null; stopReason?: string | null },
  status: string,
  wake?: WebhookWake,
  as?: keyof typeof RUN_SUMMARIES,
  at?: Date,
): Promise<void> {
  const type = as ?? RUN_EVENTS[status as keyof typeof RUN_EVENTS];
  if (!type) return;
  const summary = RUN_SUMMARIES[type] + (run.failureReason ? ` (${run.failureReason})` : "");
  await recordWebhookEvent(
    tx,
    {
      ownerId: run.ownerId,
      type,
      data: {
        runId: encodeGlobalId("Run", run.id),
        workspaceId: run.workspaceId ? encodeGlobalId("Workspace", run.workspaceId) : null,
        conversationId: encodeGlobalId("Conversation", run.conversationId),
        status,
        // How an ended run ended (Run.stopReason); absent from the events of a run still going.
        ...(run.stopReason ? { stopReason: run.stopReason } : {}),
        // What an ended run cost (Run.cost, USD) and whether a model call had no price (Run.costUnpriced).
        ...(ENDED_STATUSES.has(status) ? await endedRunCost(tx, run.id) : {}),
        summary,
      },
      at,
    },
    wake,
  );
}

/** Stands for a value of an ended run's event body that the statement recording it fills in. */
const AMOUNT = "\u0000amount\u0000";
const UNPRICED = "\u0000unpriced\u0000";

/**
 * The event an ended run's status reports (none: the status reports nothing), for a statement that
 * records it with the run's cost as the statement reads it: the body as `recordRunEvent` writes it,
 * in three parts around the cost's amount (a JSON string) and `costUnpriced` (a JSON boolean).
 */
export function endedRunEvent(
  run: { id: string; ownerId: string; workspaceId: string | null; conversationId: string; stopReason?: string | null },
  status: string,
  at: Date,
): { ownerId: string; type: WebhookEventTypeName; eventId: string; parts: [string, string, string] } | null {
  const type = RUN_EVENTS[status as keyof typeof RUN_EVENTS];
  if (!type || !ENDED_STATUSES.has(status)) return null;
  const data: WebhookEventData = {
    runId: encodeGlobalId("Run", run.id),
    workspaceId: run.workspaceId ? encodeGlobalId("Workspace", run.workspaceId) : null,
    conversationId: encodeGlobalId("Conversation", run.conversationId),
    status,
    ...(run.stopReason ? { stopReason: run.stopReason } : {}),
    cost: { amount: AMOUNT, currency: COST_CURRENCY },
    costUnpriced: UNPRICED,
    summary: RUN_SUMMARIES[type],
  };
  const body = JSON.stringify({ type, timestamp: at.toISOString(), data } satisfies WebhookEventBody);
  const [before, rest] = body.split(JSON.stringify(AMOUNT)) as [string, string];
  const [between, after] = rest.split(JSON.stringify(UNPRICED)) as [string, string];
  return { ownerId: run.ownerId, type, eventId: `msg_${randomUUID().replaceAll("-", "")}`, parts: [before, between, after] };
}

/** Records a run's status by its id (for callers that hold only the id), in the same transaction. */
export async function recordRunEventById(tx: Prisma.TransactionClient, runId: string, status: string, wake?: WebhookWake): Promise<void> {
  const run = await tx.run.findUnique({
    where: { id: runId },
    select: { id: true, ownerId: true, workspaceId: true, conversationId: true, failureReason: true, stopReason: true },
  });
  if (run) await recordRunEvent(tx, run, status, wake);
}

/** A checkpoint revision, for the workspace owner's webhooks (the revision's text is not sent). */
export function recordCheckpointEvent(
  tx: Prisma.TransactionClient,
  ownerId: string,
  checkpoint: { id: string; workspaceId: string; revision: number; origin: string; originRunId: string | null },
  wake?: WebhookWake,
): Promise<void> {
  const by = checkpoint.origin === "USER" ? "written by its owner" : "from a run";
  return recordWebhookEvent(
    tx,
    {
      ownerId,
      type: "CHECKPOINT_UPDATED",
      data: {
        workspaceId: encodeGlobalId("Workspace", checkpoint.workspaceId),
        checkpointId: encodeGlobalId("CheckpointVersion", checkpoint.id),
        revision: checkpoint.revision,
        runId: checkpoint.originRunId ? encodeGlobalId("Run", checkpoint.originRunId) : null,
        summary: `checkpoint revision ${checkpoint.revision} (${by})`,
      },
    },
    wake,
  );
}

/** A publication version, for its owner's webhooks (the content is not sent). */
export function recordPublicationEvent(
  tx: Prisma.TransactionClient,
  ownerId: string,
  version: {
    id: string;
    publicationId: string;
    version: number;
    originRunId: string | null;
    changesPreviousVersion?: number | null;
    changesAddedLines?: number | null;
    changesRemovedLines?: number | null;
  },
  wake?: WebhookWake,
): Promise<void> {
  return recordWebhookEvent(
    tx,
    {
      ownerId,
      type: "PUBLICATION_VERSION_CREATED",
      data: {
        publicationId: encodeGlobalId("Publication", version.publicationId),
        versionId: encodeGlobalId("PublicationVersion", version.id),
        version: version.version,
        runId: version.originRunId ? encodeGlobalId("Run", version.originRunId) : null,
        // What changed since the previous version (null for the first): counts only, never the text.
        previousVersion: version.changesPreviousVersion ?? null,
        addedLines: version.changesAddedLines ?? null,
        removedLines: version.changesRemovedLines ?? null,
        summary:
          version.changesPreviousVersion != null
            ? `version ${version.version} of a publication: ${version.changesAddedLines} lines added, ${version.changesRemovedLines} removed since version ${version.changesPreviousVersion}`
            : `version ${version.version} of a publication`,
      },
    },
    wake,
  );
}

/** A schedule that paused itself (pauseAfterFailures, its API key revoked: no last run), for its owner's webhooks. */
export function recordSchedulePausedEvent(
  tx: Prisma.TransactionClient,
  schedule: { id: string; ownerId: string; workspaceId: string; pausedReason: string; lastRunId: string | null },
  wake?: WebhookWake,
): Promise<void> {
  return recordWebhookEvent(
    tx,
    {
      ownerId: schedule.ownerId,
      type: "SCHEDULE_PAUSED",
      data: {
        scheduleId: encodeGlobalId("Schedule", schedule.id),
        workspaceId: encodeGlobalId("Workspace", schedule.workspaceId),
        runId: schedule.lastRunId ? encodeGlobalId("Run", schedule.lastRunId) : null,
        summary: schedule.pausedReason,
      },
    },
    wake,
  );
}
