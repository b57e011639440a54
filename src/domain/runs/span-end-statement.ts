// A span's end as one statement, in the transaction that logs what it produced (a model reply):
// the trace's next seq number, the span's status, usage and merged attributes, its replay-log row
// (with how to undo the attributes it replaced, as trace-writes.ts logs it), and — a model call
// that ended with usage — its price and the charge to its run and to its owner's day. The price is
// read inside the statement, as price-book.ts picks it, so a price set a moment ago applies at
// once, and every product is exact (numeric), rounded half up to COST_SCALE as priceUsage rounds.
// One round trip instead of the six the same writes took one by one. The same statement can ride
// in the reply's log append (log-statement.ts), its CTEs then guarded by the append's fence check.
// Every sum saturates: tokens at MAX_TOKEN_COUNT, costs at MAX_COST (what the columns hold), so a
// server that reports billions of tokens of a dear model stops a run at its caps, never fails it.
import type { Prisma, SpanStatus } from "../../generated/prisma/client.js";
import { toStoredJson } from "../text/stored-text.js";
import { type EndedRow, endedChange } from "../trace/span-statements.js";
import type { SpanUsage, TraceChange } from "../trace/trace-writes.js";
import { COST_SCALE, MAX_COST, type PricedUsage, toDecimal, usageParts } from "../costs/pricing.js";
import { MAX_TOKEN_COUNT } from "./vocabulary.js";
import { REQUEST_MODEL_ATTRIBUTE } from "../costs/span-cost.js";
import { type Carried, routed, type StatementRoute, type Transact } from "../transaction.js";

type ChargedRow = EndedRow & {
  /** The owner of the run charged; null when nothing was charged (not a model call, or no usage, and no tokens). */
  owner_id: string | null;
  tokens_used: number | null;
  charged: boolean;
  amount: string | null;
};

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

type SpanEndInput = { status: SpanStatus; attributes?: Record<string, unknown>; usage?: SpanUsage & PricedUsage; tokens?: number };

/** The budget tokens a span's end adds to its run: a whole number from 0 to MAX_TOKEN_COUNT; null without any. */
const tokensOf = (end: SpanEndInput): number | null => (end.tokens === undefined ? null : Math.min(Math.max(0, Math.trunc(end.tokens)), MAX_TOKEN_COUNT));

/** What a span's end did: the replay-log change to announce after commit, the run's owner when its lists changed, its tokens used. */
export type SpanEnded = { owner: string | null; change: TraceChange; tokensUsed: number | null };

/**
 * The span end's CTEs, its parameters numbered from $first, and the expression of its result row
 * (`ended_row`, JSON; null when nothing was ended). `guard`: a condition every write of it waits
 * for (the fence's check of the statement it rides in).
 */
function spanEndSql(
  span: { id: string; traceId: string },
  end: SpanEndInput,
  at: Date,
  first: number,
  guard = "true",
): { ctes: string; params: unknown[]; row: string; tokens: number | null } {
  const $ = (n: number) => `$${first + n - 1}`;
  const tokens = tokensOf(end);
  const set = end.attributes ? toStoredJson(end.attributes) : null;
  const parts = end.usage ? usageParts(end.usage) : null;
  const rate = (tokens: number, column: string, fallback: string) => `${tokens}::numeric * COALESCE(p.${column}, p.${fallback})`;
  const price = parts
    ? [
        rate(parts.input - parts.cached - parts.cacheWrite, "input_per_million", "input_per_million"),
        rate(parts.cached, "cached_input_per_million", "input_per_million"),
        rate(parts.cacheWrite, "cache_write_per_million", "input_per_million"),
        rate(parts.output - parts.reasoning, "output_per_million", "output_per_million"),
        rate(parts.reasoning, "reasoning_per_million", "output_per_million"),
      ].join(" + ")
    : "NULL";
  const ctes = `cur AS (SELECT s.attributes, s.kind, s.trace_id FROM span s WHERE s.id = ${$(2)} AND ${guard}),
     owner AS (SELECT r.id AS run_id, r.owner_id FROM cur JOIN trace t ON t.id = cur.trace_id JOIN run r ON r.id = t.run_id),
     priced AS (
       SELECT r.run_id, r.owner_id,
         (SELECT LEAST(round((${price}) * 0.000001, ${COST_SCALE}), ${MAX_COST}) FROM model_price p
          WHERE p.model = cur.attributes ->> ${$(7)} AND p.effective_from <= ${$(4)}::text::timestamptz AND (p.principal_id = r.owner_id OR p.principal_id IS NULL)
          ORDER BY p.principal_id ASC NULLS LAST, p.effective_from DESC LIMIT 1) AS amount
       FROM cur, owner r
       WHERE ${$(5)}::jsonb IS NOT NULL AND cur.kind = 'MODEL_CALL'
     ),
     seqs AS (UPDATE trace SET last_seq = last_seq + 1 WHERE id = ${$(1)} AND EXISTS (SELECT 1 FROM cur) RETURNING last_seq AS seq),
     ended AS (
       UPDATE span SET status = ${$(3)}::"SpanStatus", ended_at = ${$(4)}::text::timestamptz, usage = COALESCE(${$(5)}::jsonb, span.usage),
         cost = CASE WHEN priced.run_id IS NULL THEN span.cost ELSE priced.amount END,
         cost_unpriced = CASE WHEN priced.run_id IS NULL THEN span.cost_unpriced ELSE priced.amount IS NULL END,
         attributes = CASE WHEN ${$(6)}::jsonb IS NULL THEN span.attributes ELSE COALESCE(span.attributes, '{}'::jsonb) || ${$(6)}::jsonb END
       FROM seqs LEFT JOIN priced ON true
       WHERE span.id = ${$(2)}
       RETURNING span.*, seqs.seq
     ),
     keys AS (SELECT k.key, k.n FROM jsonb_array_elements_text(${$(8)}::jsonb) WITH ORDINALITY AS k(key, n)),
     undo AS (
       SELECT jsonb_build_object(
         'before', COALESCE((SELECT jsonb_object_agg(keys.key, cur.attributes -> keys.key) FROM keys WHERE jsonb_exists(cur.attributes, keys.key)), '{}'::jsonb),
         'added', COALESCE((SELECT jsonb_agg(keys.key ORDER BY keys.n) FROM keys WHERE NOT jsonb_exists(COALESCE(cur.attributes, '{}'::jsonb), keys.key)), '[]'::jsonb)
       ) AS undo
       FROM cur WHERE ${$(6)}::jsonb IS NOT NULL
     ),
     change AS (
       INSERT INTO trace_change (trace_id, seq, type, span_id, span_after, at)
       SELECT ${$(1)}, ended.seq, 'SPAN_ENDED', ended.id,
         jsonb_build_object('status', ended.status::text, 'endedAt', ${$(4)}::text, 'usage', ended.usage)
           || CASE WHEN ended.cost IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('cost', trim_scale(ended.cost)::text) END
           || CASE WHEN ended.cost_unpriced THEN '{"costUnpriced": true}'::jsonb ELSE '{}'::jsonb END
           || COALESCE((SELECT jsonb_build_object('undo', undo.undo) FROM undo), '{}'::jsonb),
         ${$(4)}::text::timestamptz
       FROM ended
     ),
     charged AS (
       UPDATE run SET cost = LEAST(run.cost + COALESCE(priced.amount, 0), ${MAX_COST}),
         cost_unpriced = run.cost_unpriced OR (priced.run_id IS NOT NULL AND priced.amount IS NULL),
         tokens_used = LEAST(run.tokens_used::bigint + COALESCE(${$(9)}::int, 0), ${MAX_TOKEN_COUNT})
       FROM owner LEFT JOIN priced ON true
       WHERE run.id = owner.run_id AND EXISTS (SELECT 1 FROM ended) AND (priced.run_id IS NOT NULL OR ${$(9)}::int IS NOT NULL)
       RETURNING run.owner_id, run.tokens_used
     ),
     daily AS (
       INSERT INTO principal_daily_cost (principal_id, day, cost)
       SELECT priced.owner_id, (now() AT TIME ZONE 'UTC')::date, priced.amount FROM priced
       WHERE priced.amount IS NOT NULL AND EXISTS (SELECT 1 FROM ended)
       ON CONFLICT (principal_id, day) DO UPDATE SET cost = LEAST(principal_daily_cost.cost + EXCLUDED.cost, ${MAX_COST})
     )`;
  const row = `(SELECT jsonb_build_object('seq', ended.seq, 'parent_id', ended.parent_id, 'kind', ended.kind::text, 'name', ended.name,
       'attributes', ended.attributes::text, 'usage', ended.usage::text, 'cost', trim_scale(ended.cost)::text, 'cost_unpriced', ended.cost_unpriced,
       'started_at', ${iso("ended.started_at")}, 'owner_id', (SELECT owner_id FROM charged), 'tokens_used', (SELECT tokens_used FROM charged),
       'charged', EXISTS (SELECT 1 FROM priced), 'amount', (SELECT trim_scale(amount)::text FROM priced)) FROM ended)`;
  const params = [
    span.traceId,
    span.id,
    end.status,
    at.toISOString(),
    end.usage ? JSON.stringify(end.usage) : null,
    set ? JSON.stringify(set) : null,
    REQUEST_MODEL_ATTRIBUTE,
    JSON.stringify(set ? Object.keys(set) : []),
    tokens,
  ];
  return { ctes, params, row, tokens };
}

/** What the statement gave back of the ended span, as what is announced and charged. */
function spanEnded(span: { id: string; traceId: string }, status: SpanStatus, row: ChargedRow, at: Date, tokens: number | null): SpanEnded {
  const change = endedChange(span, status, row, at.toISOString());
  // As chargeRunIn and addTokens: the run's lists hear of an unpriced call, a cost that is not zero, or tokens.
  const costChanged = row.charged && (row.amount === null || !toDecimal(row.amount).isZero());
  const owner = costChanged || (tokens ?? 0) > 0 ? row.owner_id : null;
  return { owner, change, tokensUsed: tokens === null || row.tokens_used === null ? null : Number(row.tokens_used) };
}

/**
 * Ends `span` in `tx`, adding `end.tokens` (budget tokens) to its run in the same write as the
 * charge. Resolves with the replay-log change to announce after commit, with the run's owner when
 * the run's cost, costUnpriced or tokens changed — a run-list change — else null, and with the
 * run's tokens used after `end.tokens` (null without them).
 */
export async function endSpanPricedIn(tx: Prisma.TransactionClient, span: { id: string; traceId: string }, end: SpanEndInput, at: Date): Promise<SpanEnded> {
  const { ctes, params, row, tokens } = spanEndSql(span, end, at, 1);
  const [result] = await tx.$queryRawUnsafe<{ ended: ChargedRow | null }[]>(`WITH ${ctes} SELECT ${row} AS ended`, ...params);
  if (!result?.ended) throw new Error(`span ${span.id} does not exist`);
  return spanEnded(span, end.status, result.ended, at, tokens);
}

/**
 * The same end, to ride in a one-statement write (domain/transaction.ts, Carried): `ended` is
 * called with what it did once that statement committed with it.
 */
export function carriedSpanEnd(span: { id: string; traceId: string }, end: SpanEndInput, at: Date, ended: (result: SpanEnded) => void): Carried {
  return {
    sql(first, guard) {
      const { ctes, params, row } = spanEndSql(span, end, at, first, guard);
      return { ctes, params, result: row, written: "EXISTS (SELECT 1 FROM ended)" };
    },
    settle(row) {
      ended(spanEnded(span, end.status, row as ChargedRow, at, tokensOf(end)));
    },
  };
}

/**
 * A write through which the caller logs what `span`'s end produced (a model call's reply), the end
 * made with its first write: carried in its statement when it is one (the log append: one round
 * trip, the fence's check inside it), else first in its transaction of `transact` (the attempt's
 * fenced one, which refuses a lost attempt and says why). `ended` is called once it committed;
 * `done` says whether it did.
 */
export function endingWith(
  route: Pick<StatementRoute, "db" | "holder" | "refuse">,
  transact: Transact,
  target: { span: { id: string; traceId: string }; end: SpanEndInput; at: Date },
  ended: (result: SpanEnded) => void,
): { write: Transact; done(): boolean } {
  const { span, end, at } = target;
  let done = false;
  const settle = (result: SpanEnded) => {
    done = true;
    ended(result);
  };
  const carry = carriedSpanEnd(span, end, at, settle);
  const write: Transact = (work) =>
    transact(async (tx, after) => {
      if (!done) {
        const result = await endSpanPricedIn(tx, span, end, at);
        after.push(() => settle(result));
      }
      return work(tx, after);
    });
  return {
    write: routed(write, {
      ...route,
      get carry() {
        return done ? undefined : carry;
      },
    }),
    done: () => done,
  };
}
