// One sequence type: every seq, lastSeq and afterSeq in the schema has the same type, and the
// SDK's documented hand-offs type-check (this file is compiled by `tsc --noEmit`: a hand-off that
// stops type-checking fails the type check, not only this test).
import { getNamedType, type GraphQLNamedType, GraphQLObjectType, type GraphQLType, isInputObjectType, isObjectType } from "graphql";
import { describe, expect, it } from "vitest";
import type { DossierClient, RunOutputUpdate, RunTrace, TraceUpdate } from "../../sdk/client.js";
import type { RunOutputSubscriptionVariables, TraceUpdatesSubscriptionVariables } from "../../sdk/generated/graphql.js";
import { schema } from "../../src/graphql/schema.js";

const SEQ_LIKE = /^(seq|lastSeq|afterSeq|.+Seq)$/;

/** Every field and argument named like a sequence position, with its type's name. */
function seqLikePlaces(): [string, string][] {
  const places: [string, string][] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith("__")) continue;
    if (isObjectType(type) || isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) {
        if (SEQ_LIKE.test(field.name)) places.push([`${type.name}.${field.name}`, (getNamedType(field.type as GraphQLType) as GraphQLNamedType).name]);
        for (const arg of "args" in field ? field.args : []) {
          if (SEQ_LIKE.test(arg.name))
            places.push([`${type.name}.${field.name}(${arg.name})`, (getNamedType(arg.type as GraphQLType) as GraphQLNamedType).name]);
        }
      }
    }
  }
  return places;
}

// The hand-offs, checked by the compiler: a position read anywhere goes to any afterSeq as it is.
function handOffs(client: DossierClient, trace: RunTrace, update: TraceUpdate, output: RunOutputUpdate) {
  const lastSeq = trace.trace!.lastSeq;
  const event = trace.trace!.spans[0]!.events[0]!;
  client.traceUpdates("run", { afterSeq: lastSeq });
  client.traceUpdates("run", { afterSeq: update.seq });
  client.runOutput("run", { afterSeq: lastSeq });
  client.watchRun("run", { afterSeq: output.seq });
  client.watchRun("run", { afterSeq: event.seq });
  const variables: [TraceUpdatesSubscriptionVariables, RunOutputSubscriptionVariables] = [
    { runId: "run", afterSeq: output.seq },
    { runId: "run", afterSeq: update.seq },
  ];
  return variables;
}

describe("sequence positions", () => {
  it("every seq-like field and argument has one type, String", () => {
    const places = seqLikePlaces();
    expect(places.map(([where]) => where)).toEqual(
      expect.arrayContaining([
        "Trace.lastSeq",
        "TraceUpdate.seq",
        "SpanEvent.seq",
        "RunOutputUpdate.seq",
        "Subscription.runOutput(afterSeq)",
        "Subscription.traceUpdates(afterSeq)",
      ]),
    );
    expect(places.filter(([, type]) => type !== "String")).toEqual([]);
    expect(schema.getType("Trace")).toBeInstanceOf(GraphQLObjectType);
    expect(handOffs).toBeTypeOf("function");
  });
});
