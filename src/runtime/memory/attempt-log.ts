// The log an attempt holds (R3): read once when the attempt starts, and kept up to date with
// every entry the attempt appends, so a turn builds its request without reading the log again.
// While the attempt runs, nothing else appends to its conversation: the conversation's execution
// slot is the run's, and a queued follow-up's question enters the log only once it is claimed.
import type { LineageLevel } from "../../domain/research/conversation-lineage.js";
import { type AfterCommit, routeOf, type Transact, within } from "../../domain/transaction.js";
import type { ConversationLog, LogEntry, LoggedMessage } from "../ports/conversation-log.js";

export class AttemptLog {
  private constructor(
    private readonly log: ConversationLog,
    private readonly run: { id: string; conversationId: string },
    private rows: LoggedMessage[],
  ) {}

  /** The run's conversation log as it is when the attempt starts. */
  static async open(log: ConversationLog, run: { id: string; conversationId: string }, lineage?: readonly LineageLevel[]): Promise<AttemptLog> {
    return new AttemptLog(log, run, await log.read(run.conversationId, lineage));
  }

  /** The run's conversation log when the attempt starts, known without a read (the claim wrote it). */
  static known(log: ConversationLog, run: { id: string; conversationId: string }, rows: readonly LoggedMessage[]): AttemptLog {
    return new AttemptLog(log, run, [...rows]);
  }

  /** The conversation's whole log, in order. */
  get entries(): readonly LoggedMessage[] {
    return this.rows;
  }

  /** The entries the run itself appended (its question included). */
  ofRun(): LoggedMessage[] {
    return this.rows.filter((message) => message.runId === this.run.id);
  }

  /**
   * Appends entries of the run through `write` (the attempt's fenced transaction, or one it is
   * already in); they join the held log once that transaction committed.
   */
  async append(write: Transact, entries: readonly LogEntry[]): Promise<LoggedMessage[]> {
    if (entries.length === 0) return [];
    const route = routeOf(write);
    if (route) {
      // The log writes through the route (one statement) or `write`'s own transaction: committed
      // once it returns, unless the route is a transaction the caller is still in.
      const rows = await this.log.append(write, { conversationId: this.run.conversationId, runId: this.run.id, entries });
      if (route.after) route.after.push(() => this.add(rows));
      else this.add(rows);
      return rows;
    }
    return write(async (tx, after: AfterCommit) => {
      const rows = await this.log.append(within(tx, after), { conversationId: this.run.conversationId, runId: this.run.id, entries });
      after.push(() => this.add(rows));
      return rows;
    });
  }

  /** Keeps the log in seq order: results of concurrent tool calls may commit in any order. */
  private add(rows: readonly LoggedMessage[]): void {
    if (rows.length === 0) return;
    const last = this.rows.at(-1)?.seq ?? 0;
    this.rows = rows.every((row) => row.seq > last) && isOrdered(rows) ? [...this.rows, ...rows] : [...this.rows, ...rows].sort((a, b) => a.seq - b.seq);
  }
}

const isOrdered = (rows: readonly LoggedMessage[]) => rows.every((row, index) => index === 0 || rows[index - 1]!.seq < row.seq);
