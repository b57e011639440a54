// A span's end as one statement, in the transaction that logs what it produced (a model reply):
// the trace's next seq number, the span's status, usage and merged attributes, its replay-log row
// (with how to undo the attributes it replaced, as trace-writes.ts logs it), and — a model call
// that ended with usage — its price and the charge to its run and to its owner's day. The price is
// read inside the statement, as price-book.ts picks it, so a price set a moment ago applies at
// once, and every product is exact (numeric), rounded half up to COST_SCALE as priceUsage rounds.
// One round trip instead of the six the same writes took one by one.
import type { Prisma, SpanStatus } from "../../generated/prisma/client.js";
import { toStoredJson } from "../text/stored-text.js";
import { type EndedRow, endedChange } from "../trace/span-statements.js";
import type { SpanUsage, TraceChange } from "../trace/trace-writes.js";
import { COST_SCALE, type PricedUsage, toDecimal, usageParts } from "../costs/pricing.js";
import { REQUEST_MODEL_ATTRIBUTE } from "../costs/span-cost.js";

type ChargedRow = EndedRow & {
  /** The owner of the run charged; null when nothing was charged (not a model call, or no usage, and no tokens). */
  owner_id: string | null;
  tokens_used: number | null;
  charged: boolean;
  amount: string | null;
};

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Ends `span` in `tx`, adding `end.tokens` (budget tokens) to its run in the same write as the
 * charge. Resolves with the replay-log change to announce after commit, with the run's owner when
 * the run's cost, costUnpriced or tokens changed — a run-list change — else null, and with the
 * run's tokens used after `end.tokens` (null without them).
 */
export async function endSpanPricedIn(
  tx: Prisma.TransactionClient,
  span: { id: string; traceId: string },
  end: { status: SpanStatus; attributes?: Record<string, unknown>; usage?: SpanUsage & PricedUsage; tokens?: number },
  at: Date,
): Promise<{ owner: string | null; change: TraceChange; tokensUsed: number | null }> {
  const tokens = end.tokens === undefined ? null : Math.max(0, Math.trunc(end.tokens));
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
  const at_ = at.toISOString();
  const [row] = await tx.$queryRawUnsafe<ChargedRow[]>(
    `WITH cur AS (SELECT s.attributes, s.kind, s.trace_id FROM span s WHERE s.id = $2),
     owner AS (SELECT r.id AS run_id, r.owner_id FROM cur JOIN trace t ON t.id = cur.trace_id JOIN run r ON r.id = t.run_id),
     priced AS (
       SELECT r.run_id, r.owner_id,
         (SELECT round((${price}) * 0.000001, ${COST_SCALE}) FROM model_price p
          WHERE p.model = cur.attributes ->> $7 AND p.effective_from <= $4::text::timestamptz AND (p.principal_id = r.owner_id OR p.principal_id IS NULL)
          ORDER BY p.principal_id ASC NULLS LAST, p.effective_from DESC LIMIT 1) AS amount
       FROM cur, owner r
       WHERE $5::jsonb IS NOT NULL AND cur.kind = 'MODEL_CALL'
     ),
     seqs AS (UPDATE trace SET last_seq = last_seq + 1 WHERE id = $1 AND EXISTS (SELECT 1 FROM cur) RETURNING last_seq AS seq),
     ended AS (
       UPDATE span SET status = $3::"SpanStatus", ended_at = $4::text::timestamptz, usage = COALESCE($5::jsonb, span.usage),
         cost = CASE WHEN priced.run_id IS NULL THEN span.cost ELSE priced.amount END,
         cost_unpriced = CASE WHEN priced.run_id IS NULL THEN span.cost_unpriced ELSE priced.amount IS NULL END,
         attributes = CASE WHEN $6::jsonb IS NULL THEN span.attributes ELSE COALESCE(span.attributes, '{}'::jsonb) || $6::jsonb END
       FROM seqs LEFT JOIN priced ON true
       WHERE span.id = $2
       RETURNING span.*, seqs.seq
     ),
     keys AS (SELECT k.key, k.n FROM jsonb_array_elements_text($8::jsonb) WITH ORDINALITY AS k(key, n)),
     undo AS (
       SELECT jsonb_build_object(
         'before', COALESCE((SELECT jsonb_object_agg(keys.key, cur.attributes -> keys.key) FROM keys WHERE jsonb_exists(cur.attributes, keys.key)), '{}'::jsonb),
         'added', COALESCE((SELECT jsonb_agg(keys.key ORDER BY keys.n) FROM keys WHERE NOT jsonb_exists(COALESCE(cur.attributes, '{}'::jsonb), keys.key)), '[]'::jsonb)
       ) AS undo
       FROM cur WHERE $6::jsonb IS NOT NULL
     ),
     change AS (
       INSERT INTO trace_change (trace_id, seq, type, span_id, span_after, at)
       SELECT $1, ended.seq, 'SPAN_ENDED', ended.id,
         jsonb_build_object('status', ended.status::text, 'endedAt', $4::text, 'usage', ended.usage)
           || CASE WHEN ended.cost IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('cost', trim_scale(ended.cost)::text) END
           || CASE WHEN ended.cost_unpriced THEN '{"costUnpriced": true}'::jsonb ELSE '{}'::jsonb END
           || COALESCE((SELECT jsonb_build_object('undo', undo.undo) FROM undo), '{}'::jsonb),
         $4::text::timestamptz
       FROM ended
     ),
     charged AS (
       UPDATE run SET cost = run.cost + COALESCE(priced.amount, 0),
         cost_unpriced = run.cost_unpriced OR (priced.run_id IS NOT NULL AND priced.amount IS NULL),
         tokens_used = run.tokens_used + COALESCE($9::int, 0)
       FROM owner LEFT JOIN priced ON true
       WHERE run.id = owner.run_id AND EXISTS (SELECT 1 FROM ended) AND (priced.run_id IS NOT NULL OR $9::int IS NOT NULL)
       RETURNING run.owner_id, run.tokens_used
     ),
     daily AS (
       INSERT INTO principal_daily_cost (principal_id, day, cost)
       SELECT priced.owner_id, (now() AT TIME ZONE 'UTC')::date, priced.amount FROM priced
       WHERE priced.amount IS NOT NULL AND EXISTS (SELECT 1 FROM ended)
       ON CONFLICT (principal_id, day) DO UPDATE SET cost = principal_daily_cost.cost + EXCLUDED.cost
     )
     SELECT ended.seq, ended.parent_id, ended.kind::text AS kind, ended.name, ended.attributes::text AS attributes,
            ended.usage::text AS usage, trim_scale(ended.cost)::text AS cost, ended.cost_unpriced, ${iso("ended.started_at")} AS started_at,
            (SELECT owner_id FROM charged) AS owner_id, (SELECT tokens_used FROM charged) AS tokens_used, EXISTS (SELECT 1 FROM priced) AS charged,
            (SELECT trim_scale(amount)::text FROM priced) AS amount
       FROM ended`,
    span.traceId,
    span.id,
    end.status,
    at_,
    end.usage ? JSON.stringify(end.usage) : null,
    set ? JSON.stringify(set) : null,
    REQUEST_MODEL_ATTRIBUTE,
    JSON.stringify(set ? Object.keys(set) : []),
    tokens,
  );
  if (!row) throw new Error(`span ${span.id} does not exist`);
  const change = endedChange(span, end.status, row, at_);
  // As chargeRunIn and addTokens: the run's lists hear of an unpriced call, a cost that is not zero, or tokens.
  const costChanged = row.charged && (row.amount === null || !toDecimal(row.amount).isZero());
  const owner = costChanged || (tokens ?? 0) > 0 ? row.owner_id : null;
  return { owner, change, tokensUsed: tokens === null || row.tokens_used === null ? null : Number(row.tokens_used) };
}
