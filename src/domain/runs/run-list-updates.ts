// A live run list (runsChanged): the changes of a principal's runs as they enter, change in or
// leave one RunFilter, resumable with afterSeq across reconnects and instances.
//
// The source of truth is the run_list_change log (schema.prisma, RunListChange): the database
// logs every write of a run row, in its transaction, with the run's filter columns before and
// after, numbered per principal in commit order (contiguous: a gap means the log was pruned). The
// bus only wakes subscribers ("run:list", per principal, published after commit); each reads the
// log after the last change it delivered and decides in memory, with runMatchesFilter on the
// before and after columns, whether a change adds the run to its list, updates it there, or
// removes it. A subscriber holds at most one page of the log; one whose position the log no
// longer keeps (it is bounded: the latest 10,000 changes of each principal) is told to resync.
import { keepListening } from "../../events/keep-listening.js";
import type { EventBus } from "../../events/topics.js";
import { silentLogger } from "../../logger.js";
import type { PrismaClient, RunStatus } from "../../generated/prisma/client.js";
import { type FilteredRun, type RunFilter, runMatchesFilter } from "./run-filter.js";

export type RunListUpdateKind = "ADDED" | "UPDATED" | "REMOVED" | "RESYNC_REQUIRED";

/** One change of the list; RESYNC_REQUIRED names no run, and its seq is the position to resume from once the list is re-read. */
export type RunListUpdate = { seq: number; kind: RunListUpdateKind; runId: string | null; at: Date };

/** Where a run lies, as an access token's grants see it. */
export type RunPlacement = { id: string; workspaceId: string | null; conversationId: string };

export type RunListUpdatesOptions = {
  prisma: PrismaClient;
  events: EventBus;
  principalId: string;
  filter: RunFilter;
  /** Which of a page's runs the subscriber may see at all (an access token's grants and links); absent: every run of the principal. */
  visible?: (runs: RunPlacement[]) => Promise<Set<string>>;
  /** The last seq the subscriber holds; null: from now on. */
  afterSeq: number | null;
  /** Ends the stream, also while it waits. */
  signal?: AbortSignal;
  /** How long a quiet stream waits before it reads the log for a wake-up it may have missed (default 5 s). */
  idleCheckMs?: number;
};

/** How many changes a subscriber reads (and holds) at once. */
const PAGE = 200;
const IDLE_CHECK_MS = 5_000;

type LoggedChange = {
  seq: number;
  runId: string;
  at: Date;
  statusBefore: RunStatus | null;
  statusAfter: RunStatus;
  tagsBefore: string[];
  tagsAfter: string[];
  metadataBefore: unknown;
  metadataAfter: unknown;
  /** Null when the change is the run's admission. */
  costBefore: FilteredRun["cost"] | null;
  costAfter: FilteredRun["cost"];
  run: Pick<FilteredRun, "workspaceId" | "conversationId" | "scheduleId" | "agent" | "createdAt">;
};

/** What a logged change is to a list with this filter: null when the run is in it neither before nor after. */
export function kindOf(change: LoggedChange, filter: RunFilter): "ADDED" | "UPDATED" | "REMOVED" | null {
  const after = runMatchesFilter(
    { ...change.run, status: change.statusAfter, tags: change.tagsAfter, metadata: change.metadataAfter as FilteredRun["metadata"], cost: change.costAfter },
    filter,
  );
  const before =
    change.statusBefore !== null &&
    runMatchesFilter(
      {
        ...change.run,
        status: change.statusBefore,
        tags: change.tagsBefore ?? [],
        metadata: (change.metadataBefore ?? {}) as FilteredRun["metadata"],
        cost: change.costBefore ?? change.costAfter,
      },
      filter,
    );
  if (before && after) return "UPDATED";
  if (after) return "ADDED";
  if (before) return "REMOVED";
  return null;
}

export async function* runListUpdates(options: RunListUpdatesOptions): AsyncGenerator<RunListUpdate> {
  const { prisma, principalId, filter, visible } = options;
  // From now on: the position is read before listening, and the log is read after, so a change
  // committed in between is found there rather than missed.
  let last = options.afterSeq ?? (await lastSeqOf(prisma, principalId));
  const wake = listen(options);
  try {
    for (;;) {
      const page = await prisma.runListChange.findMany({
        where: { principalId, seq: { gt: last } },
        orderBy: { seq: "asc" },
        take: PAGE,
        include: { run: { select: { workspaceId: true, conversationId: true, scheduleId: true, agent: true, createdAt: true } } },
      });
      // Seq is contiguous per principal: a first change past last + 1 means the ones between were pruned.
      if (page.length > 0 && page[0]!.seq > last + 1) {
        yield { seq: await lastSeqOf(prisma, principalId), kind: "RESYNC_REQUIRED", runId: null, at: new Date() };
        return;
      }
      const listed = page.flatMap((change) => {
        const kind = kindOf(change, filter);
        return kind ? [{ change, kind }] : [];
      });
      // Decided for the whole page at once.
      const shown = visible ? await visible(listed.map(({ change }) => ({ id: change.runId, ...change.run }))) : null;
      for (const { change, kind } of listed) {
        if (!shown || shown.has(change.runId)) yield { seq: change.seq, kind, runId: change.runId, at: change.at };
      }
      if (page.length > 0) last = page.at(-1)!.seq;
      if (page.length === PAGE) continue;
      if ((await wake.next(options.idleCheckMs ?? IDLE_CHECK_MS)) === "closed") return;
    }
  } finally {
    wake.close();
  }
}

async function lastSeqOf(prisma: PrismaClient, principalId: string): Promise<number> {
  const row = await prisma.runListSequence.findUnique({ where: { principalId }, select: { lastSeq: true } });
  return row?.lastSeq ?? 0;
}

/**
 * Listens at once (before the first read, so no change committed after it is missed). Wake-ups
 * are coalesced into one flag: however many changes are announced while the subscriber reads or
 * delivers, it reads the log once more, so nothing queues up in memory.
 */
function listen({ events, principalId, signal }: RunListUpdatesOptions) {
  let woken = false;
  let resolveWait: (() => void) | undefined;
  const wake = () => {
    woken = true;
    resolveWait?.();
  };
  // A subscription made again (after more announcements than the bus keeps for one subscriber, or
  // a failure) wakes too: each announcement only says "read the log".
  const listening = keepListening({
    what: "run list changes",
    subscribe: () => events.subscribe("run:list", principalId),
    onEvent: wake,
    onResumed: wake,
    logger: silentLogger,
  });
  const close = () => {
    void listening.stop();
    resolveWait?.();
  };
  signal?.addEventListener("abort", close, { once: true });
  return {
    /** Resolves once a change was announced, or after `idleMs` without one; "closed" once the stream ended. */
    async next(idleMs: number): Promise<"woken" | "closed"> {
      if (!woken && !signal?.aborted) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          resolveWait = resolve;
          timer = setTimeout(resolve, idleMs);
        });
        clearTimeout(timer);
      }
      woken = false;
      return signal?.aborted ? "closed" : "woken";
    },
    close() {
      signal?.removeEventListener("abort", close);
      close();
    },
  };
}
