// Where a turn gap goes (bench/run-path.ts, BENCH_TURN_TIMELINE=<file>): the server process
// (run-path-server.ts) notes when it sends each statement of a turn and when it calls the model,
// on the machine's clock; the model server notes when each request arrived and when it wrote an
// answer's last byte. Between an answer's last byte and the next request's arrival a steady turn
// sends its reply's statement (the model call's end and the reply's log entry), its result's (the
// tool's records and its log entry, with the next turn's read), the trace records made since
// (the turn's end, the next turn's start, the model call's start) and then the request. On the
// embedded database every statement runs on the server's one thread: a statement sent is executed
// before anything later in the turn, so the intervals between sends bound each statement's time.
import { readFileSync } from "node:fs";
import { percentile } from "./support.js";

/** What a statement of a steady turn is, by its text. */
export function statementKind(sql: string): string {
  if (/\bcur AS \(/.test(sql) && /INSERT INTO message/.test(sql)) return "reply";
  if (/batch_input AS/.test(sql)) return /INSERT INTO message/.test(sql) ? "result" : "records";
  // Any other statement is named by its first words: what else ran in a gap.
  return `other:${sql.trim().replace(/\s+/g, "_").slice(0, 40)}`;
}

/** The server's side: a line per statement sent and per model request made (`<epoch ms> <kind>`). */
export function serverTimeline(): { note(kind: string): void; text(): string } {
  const lines: string[] = [];
  return {
    note: (kind) => lines.push(`${(performance.timeOrigin + performance.now()).toFixed(3)} ${kind}`),
    text: () => lines.join("\n"),
  };
}

/** The model server's side of a run: its requests' arrivals and its answers' last bytes, in epoch ms. */
export type ModelTimeline = { requests: number[]; answered: number[] };

const SEGMENTS = [
  ["last byte → reply sent", "last", "reply"],
  ["reply sent → result sent", "reply", "result"],
  ["result sent → model called", "result", "request"],
  ["model called → request arrived", "request", "arrived"],
] as const;

/** Prints, per segment of the steady turns' gaps, its median and 90th percentile; and the statements sent in a gap. */
export function printTurnTimeline(file: string, runs: readonly ModelTimeline[]): void {
  const events = readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [at, kind] = line.split(" ");
      return { at: Number(at), kind: kind! };
    });
  const segments = new Map<string, number[]>(SEGMENTS.map(([label]) => [label, []]));
  const sent = new Map<string, number>();
  let gaps = 0;
  for (const { requests, answered } of runs) {
    for (let turn = 0; turn + 1 < requests.length && turn < answered.length; turn += 1) {
      const from = answered[turn]!;
      const to = requests[turn + 1]!;
      const inGap = events.filter((event) => event.at >= from && event.at <= to);
      const first = (kind: string) => inGap.find((event) => event.kind === kind)?.at;
      const at: Record<string, number | undefined> = { last: from, reply: first("reply"), result: first("result"), request: first("request"), arrived: to };
      if (at.reply === undefined || at.result === undefined || at.request === undefined) continue;
      gaps += 1;
      for (const [label, start, end] of SEGMENTS) segments.get(label)!.push(at[end]! - at[start]!);
      for (const event of inGap) sent.set(event.kind, (sent.get(event.kind) ?? 0) + 1);
    }
  }
  console.log(`\nturn gap by segment (${gaps} steady turns; the statements' execution is in the segment that follows their send):`);
  for (const [label, values] of segments)
    console.log(`  ${label.padEnd(32)} p50 ${percentile(values, 50).toFixed(2)} ms, p90 ${percentile(values, 90).toFixed(2)} ms`);
  console.log("  statements sent per gap (and model requests made):");
  for (const [kind, n] of [...sent].sort((a, b) => b[1] - a[1])) console.log(`    ${(n / Math.max(gaps, 1)).toFixed(2)}  ${kind}`);
}
