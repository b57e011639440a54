// Live model output on the event bus (runOutput): each model call's coalesced deltas go out on
// `run:output`, to subscribers on this instance and, with Redis, on every other. A subscriber who
// joins mid-call asks on `run:output:wanted`; the instance executing the call answers with what
// the call produced so far. Only this instance holds that text: it is never stored. A run's calls
// are given whole at most once a window, however many ask: the first ask at once, the asks that
// follow within the window together at its end. The window is `snapshotEveryMs`, longer for a
// large call (`snapshotCharsPerSecond`). One principal starting and leaving subscriptions in a loop
// on its run, whose call streams large tool arguments, costs the bus one snapshot a window, not
// one per ask: answered one by one, they took this instance's loop and the publish backlog that
// every principal's live output shares (redis-event-target.ts), and the other runs' pieces were dropped.
// The characters a second that answers cost are counted per asker — the subscriber's principal's own
// asks, and all of its access tokens' asks together — whatever the number of runs it asks for:
// twenty runs of one principal whose calls stream large tool arguments, each asked for over and
// over, cost the bus what one such run does (they published twenty times as much, and crowded the
// other principals' output off the Redis link), and another asker's answers do not wait behind
// theirs. A principal's access tokens share one budget however many it mints: a token per asker
// multiplied the principal's share of the link by the number of its end users. Not per run owner:
// end users holding access tokens to a principal's runs, asking over and over, delay their own and
// each other's later answers only (in the order asked), never the principal's own. An ask from an
// older server names no asker: it counts against the run's principal. An asker's runs asked for
// take their turns in the order asked, each
// answered in its turn: none is left out; an answer is one for every asker waiting for that run,
// counted against the asker whose turn gave it. An answer waiting for its turn when its call ends
// goes out then, ahead of the call's last frame, and counts against its first asker's next.
import type { EventBus, SnapshotAsker } from "../../events/topics.js";
import type { ModelCallOutput, RunOutput } from "../ports/run-output.js";
import { StreamingCall } from "../output/streaming-call.js";
import { keepListening, type Listening } from "../../events/keep-listening.js";
import { type Logger, silentLogger } from "../../logger.js";

/** The least time between two answers to the asks for one run's snapshots (BusRunOutputOptions.snapshotEveryMs). */
export const SNAPSHOT_EVERY_MS = 100;
/**
 * The characters a second the answers to one asker's asks may cost together at most: after an
 * answer of N characters, the asker's next waits N / this many seconds.
 */
export const SNAPSHOT_CHARS_PER_SECOND = 1024 * 1024;

export type BusRunOutputOptions = {
  coalesceMs?: number;
  /**
   * How long an ended call's output is still given to a subscriber who asks: one who joined just
   * as the call ended still gets its text whole.
   */
  keepEndedMs?: number;
  /**
   * The least time between two answers to asks for one run's snapshots: an ask that comes sooner
   * after an answer is answered once the time is up, together with every other ask meanwhile.
   */
  snapshotEveryMs?: number;
  /** After an answer of N characters given in an asker's turn, the asker's next waits N / this many seconds. */
  snapshotCharsPerSecond?: number;
  /** Where a failure of listening for snapshot asks is logged (it listens again). */
  logger?: Logger;
};

/** One asker's answers: when the next may go, and its runs asked for meanwhile, in the order asked. */
type Turns = { next: number; asked: Set<string>; due?: ReturnType<typeof setTimeout> };

/** An asker's turns: the principal's own asks share one, and all of its access tokens' asks another. */
const turnsKey = ({ principalId, tokenId }: SnapshotAsker): string => JSON.stringify(tokenId === undefined ? [principalId] : [principalId, "access tokens"]);

export class BusRunOutput implements RunOutput {
  /** The calls of each run this instance is executing (or ended a moment ago). */
  private readonly calls = new Map<string, Set<StreamingCall>>();
  /** The principal of each of those runs. */
  private readonly owners = new Map<string, string>();
  /** When each run's calls may next be given whole (its window after its last answer). */
  private readonly runNext = new Map<string, number>();
  /** The answers of each asker that asked a moment ago (until what its answers spent is past). */
  private readonly turns = new Map<string, Turns>();
  /** The askers waiting for each run's answer, in the order they asked. */
  private readonly waiting = new Map<string, Set<Turns>>();
  private requests: Listening | undefined;

  constructor(
    private readonly events: EventBus,
    private readonly options: BusRunOutputOptions = {},
  ) {}

  modelCall({ runId, ownerId, spanId, follows }: { runId: string; ownerId: string; spanId: string; follows?: string | null }): ModelCallOutput {
    const call = new StreamingCall({
      runId,
      spanId,
      follows,
      coalesceMs: this.options.coalesceMs,
      send: (frame) => this.events.publish("run:output", runId, frame),
    });
    const ofRun = this.calls.get(runId) ?? new Set();
    this.calls.set(runId, ofRun.add(call));
    this.owners.set(runId, ownerId);
    return {
      report: (event) => call.report(event),
      end: () => {
        // An ask waiting for its turn came before this end: answered now, ahead of the call's last frame.
        this.answerDue(runId);
        call.end();
        setTimeout(() => this.forget(call), this.options.keepEndedMs ?? 10_000).unref();
      },
    };
  }

  /** Starts answering subscribers who join mid-call (a worker companion: it starts and stops with the worker). */
  start(): void {
    if (this.requests) return;
    this.requests = keepListening({
      what: "asks for live output snapshots",
      subscribe: () => this.events.subscribe("run:output:wanted"),
      onEvent: ({ runId, asker }) => this.answer(runId, asker),
      // A subscriber who asked meanwhile was not answered: every call in flight is given whole.
      onResumed: () => {
        for (const runId of this.calls.keys()) this.answer(runId);
      },
      logger: this.options.logger ?? silentLogger,
    });
  }

  async stop(): Promise<void> {
    const requests = this.requests;
    this.requests = undefined;
    for (const { due } of this.turns.values()) clearTimeout(due);
    this.turns.clear();
    this.waiting.clear();
    this.runNext.clear();
    await requests?.stop();
  }

  /**
   * Answers an ask for a run's snapshots: at once when the run's window and its asker's are over,
   * else once they are and the asker's runs asked for before it had their turn — an answer that
   * comes after the ask, so the asker (who listened before asking) hears it, and one for all the
   * asks meanwhile, whoever's turn gives it. An ask for a run not executed here is another
   * instance's; one naming no asker (an older server's) is the run's principal's.
   */
  private answer(runId: string, asker?: SnapshotAsker): void {
    const ownerId = this.owners.get(runId);
    if (ownerId === undefined || !this.calls.has(runId)) return;
    const key = turnsKey(asker?.principalId ? asker : { principalId: ownerId });
    let turns = this.turns.get(key);
    if (!turns) this.turns.set(key, (turns = { next: Number.NEGATIVE_INFINITY, asked: new Set() }));
    // An answer already due (its timer late on a busy loop, maybe) is one after this ask too.
    if (turns.asked.has(runId)) return;
    turns.asked.add(runId);
    const waiting = this.waiting.get(runId) ?? new Set();
    this.waiting.set(runId, waiting.add(turns));
    this.giveTurns(key, turns);
  }

  /**
   * Gives the asker's runs asked for whose windows are over their answers, in turn, for as long as
   * its characters allow. An asker with nothing asked is forgotten once what its answers spent is past.
   */
  private giveTurns(key: string, turns: Turns): void {
    clearTimeout(turns.due);
    turns.due = undefined;
    const now = performance.now();
    let wake = turns.next;
    if (now >= turns.next) {
      wake = Number.POSITIVE_INFINITY;
      for (const runId of turns.asked) {
        const runNext = this.runNext.get(runId) ?? Number.NEGATIVE_INFINITY;
        if (now < runNext) wake = Math.min(wake, runNext);
        else {
          this.give(runId, turns, now);
          if (now < turns.next) {
            wake = turns.next;
            break;
          }
        }
      }
    }
    if (turns.asked.size === 0) {
      if (now >= turns.next) {
        if (this.turns.get(key) === turns) this.turns.delete(key);
        return;
      }
      wake = turns.next;
    }
    if (wake === Number.POSITIVE_INFINITY) return;
    turns.due = setTimeout(() => this.giveTurns(key, turns), wake - now);
    turns.due.unref();
  }

  /** Gives the answer waiting for its turn now, if one is: the run's call is ending. */
  private answerDue(runId: string): void {
    const [first] = this.waiting.get(runId) ?? [];
    if (first) this.give(runId, first, performance.now());
  }

  /** Publishes the run's calls whole, for every asker waiting for them, and starts its window and the asker's whose turn it is. */
  private give(runId: string, turns: Turns, now: number): void {
    this.answered(runId);
    let chars = 0;
    for (const call of this.calls.get(runId) ?? []) {
      const snapshot = call.snapshot();
      for (const part of snapshot.parts) chars += part.text.length;
      this.events.publish("run:output", call.runId, snapshot);
    }
    const spent = (chars / (this.options.snapshotCharsPerSecond ?? SNAPSHOT_CHARS_PER_SECOND)) * 1000;
    this.runNext.set(runId, now + Math.max(this.options.snapshotEveryMs ?? SNAPSHOT_EVERY_MS, spent));
    turns.next = Math.max(turns.next, now) + spent;
  }

  /** No asker waits for the run's answer any more (an asker left with nothing asked is forgotten at its next turn). */
  private answered(runId: string): void {
    for (const turns of this.waiting.get(runId) ?? []) turns.asked.delete(runId);
    this.waiting.delete(runId);
  }

  private forget(call: StreamingCall): void {
    const { runId } = call;
    const ofRun = this.calls.get(runId);
    ofRun?.delete(call);
    if (ofRun?.size !== 0) return;
    this.calls.delete(runId);
    this.owners.delete(runId);
    this.runNext.delete(runId);
    this.answered(runId);
  }
}
