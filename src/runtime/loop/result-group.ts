// The results of one action step's calls go to the log together when they are known together: the
// results reported in the same turn of the event loop (instant tools, run concurrently, finish in
// it) are one append — one statement, behind the attempt's fence, carrying the trace records made
// before them (their calls' spans and inputs) and, with the step's last result, the next turn's
// read of the run's requests — instead of one statement each. Nothing is held for a result not
// known yet: what was reported goes once the event loop's current turn is over, or at once when
// it holds every call still running. The append is atomic: a fence that refuses it refuses every
// result in it, and each caller learns why.
import type { LogEntry, LoggedMessage } from "../ports/conversation-log.js";

type ResultEntry = Extract<LogEntry, { role: "TOOL" }>;

/**
 * Appends entries in order in one write; `last`: they hold the step's last result (every call has
 * reported), so the next turn's read may ride with them.
 */
export type AppendResults = (entries: ResultEntry[], last: boolean) => Promise<readonly LoggedMessage[]>;

type Waiting = { entry: ResultEntry; resolve: (id: string) => void; reject: (error: unknown) => void };

/**
 * How the action step of `calls` calls logs a result: resolves with the entry's id once it is
 * written. A call that never reports (it waits for a decision, or was cut off) leaves the step's
 * last append without `last`.
 */
export function groupedResults(calls: number, append: AppendResults): (entry: ResultEntry) => Promise<string> {
  let unreported = calls;
  let waiting: Waiting[] = [];
  let scheduled: NodeJS.Immediate | undefined;
  const flush = () => {
    if (scheduled) clearImmediate(scheduled);
    scheduled = undefined;
    const group = waiting;
    waiting = [];
    const last = unreported === 0;
    // A spilled result is written with its spill row, in a transaction of its own: each such group goes entry by entry.
    if (group.some(({ entry }) => entry.spill)) {
      group.forEach((one, index) => void settle([one], append([one.entry], last && index === group.length - 1)));
    } else
      void settle(
        group,
        append(
          group.map((one) => one.entry),
          last,
        ),
      );
  };
  return (entry) =>
    new Promise<string>((resolve, reject) => {
      waiting.push({ entry, resolve, reject });
      unreported -= 1;
      if (unreported === 0) flush();
      else scheduled ??= setImmediate(flush);
    });
}

/** Gives each waiting result its entry's id, or the append's failure. */
async function settle(group: readonly Waiting[], appended: Promise<readonly LoggedMessage[]>): Promise<void> {
  try {
    const rows = await appended;
    for (const [index, one] of group.entries()) one.resolve(rows[index]!.id);
  } catch (error) {
    for (const one of group) one.reject(error);
  }
}
