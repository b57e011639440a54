// Positions in a sequence — TraceUpdate.seq, SpanEvent.seq, Trace.lastSeq, RunOutputUpdate.seq,
// Message.seq and every afterSeq — have one GraphQL type, String, so that any position a client
// holds can be handed to any afterSeq unchanged and type-checks in every generated client.
import { GraphQLError } from "graphql";

/** Why sequence positions are Strings; part of each such field's description in the SDL. */
export const SEQ_TYPE_NOTE =
  "A String, like every seq, lastSeq and afterSeq: positions are 64-bit counters (past GraphQL's 32-bit Int), and one type lets any position be passed as afterSeq as it is.";

/** A trace position, or a position inside the model call running at that trace position. */
export type OutputPosition = { seq: number; chars: number };

const POSITION = /^(\d{1,15})(?::(\d{1,12}))?$/;

/**
 * Reads an afterSeq: a trace position ("12"), or a runOutput position inside a running model call
 * ("12:340": 340 characters of the call delivered after trace position 12). Anything else is the
 * client's mistake, told as such.
 */
export function parseAfterSeq(value: string | null | undefined): OutputPosition {
  if (value === null || value === undefined) return { seq: 0, chars: 0 };
  const match = POSITION.exec(value);
  if (!match) {
    throw new GraphQLError(`afterSeq: ${JSON.stringify(value.slice(0, 40))} is not a position from an earlier update.`, {
      extensions: { code: "BAD_USER_INPUT", argument: "afterSeq" },
    });
  }
  return { seq: Number(match[1]), chars: Number(match[2] ?? 0) };
}

/** The String form of a position (formatOutputPosition's inverse for parseAfterSeq). */
export function formatPosition({ seq, chars }: OutputPosition): string {
  return chars > 0 ? `${seq}:${chars}` : String(seq);
}
