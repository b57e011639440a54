// Edited arguments checked against a tool's input schema that the tool (any principal's MCP
// server) chose: no schema can make the check take long in the process that serves every request.
// Its regular expressions are not applied; a schema that would be applied too many times, through
// references or combinations, or that is too large, is not applied at all; the rest still holds.
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../src/domain/errors.js";
import { CHECK_BUDGET } from "../../src/domain/runs/bounded-schema.js";
import { checkEditedArguments } from "../../src/domain/runs/tool-arguments.js";
import { toStored } from "../../src/domain/text/stored-text.js";

const stored = (schema: object) => toStored(JSON.stringify(schema));
/** The check's outcome: the arguments it accepts as JSON text, or the fields it refuses. */
const check = (value: unknown, schema: object) => {
  try {
    return checkEditedArguments(value, stored(schema));
  } catch (error) {
    if (error instanceof ValidationError) return { refused: [...new Set(error.issues.map((issue) => issue.field))] };
    throw error;
  }
};
/** Generous: the hostile cases took seconds to hours on one thread before; now a few milliseconds. */
const QUICK_MS = 1_000;
const timed = <T>(work: () => T): { result: T; ms: number } => {
  const started = performance.now();
  const result = work();
  return { result, ms: performance.now() - started };
};

describe("edited arguments against a tool's own schema", () => {
  it("does not apply a pattern (one that backtracks exponentially), and still applies the rest of the schema", () => {
    const schema = { type: "object", properties: { q: { type: "string", pattern: "^(a+)+$", maxLength: 50 } }, required: ["q"] };
    const hostile = { q: `${"a".repeat(40)}!` };
    const { result, ms } = timed(() => check(hostile, schema));
    expect(result).toBe(JSON.stringify(hostile));
    expect(ms).toBeLessThan(QUICK_MS);
    expect(check({ q: 7 }, schema)).toEqual({ refused: ["arguments.q"] });
    expect(check({ q: "a".repeat(51) }, schema)).toEqual({ refused: ["arguments.q"] });
    expect(check({}, schema)).toEqual({ refused: ["arguments.q"] });
  });

  it("does not apply format or patternProperties, and lets the keys the patterns would admit through", () => {
    const schema = {
      type: "object",
      properties: { to: { type: "string", format: "email" }, count: { type: "integer" } },
      patternProperties: { "^(x+)+$": { type: "string" } },
      additionalProperties: false,
      propertyNames: { pattern: "^(y+)+$" },
    };
    const { result, ms } = timed(() => check({ to: "not an address", xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx: 1, count: 2 }, schema));
    expect(typeof result).toBe("string");
    expect(ms).toBeLessThan(QUICK_MS);
    expect(check({ count: "two" }, schema)).toEqual({ refused: ["arguments.count"] });
  });

  it("does not apply a schema whose references would apply it exponentially many times", () => {
    // Each definition applies the one below it twice: 2^40 applications of the last to one object.
    const $defs: Record<string, object> = { d0: { type: "object", properties: { never: { type: "string" } }, required: ["never"] } };
    for (let i = 1; i <= 40; i += 1) $defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i - 1}` }, { $ref: `#/$defs/d${i - 1}` }] };
    const { result, ms } = timed(() => check({ a: 1 }, { $defs, $ref: "#/$defs/d40" }));
    expect(result).toBe('{"a":1}');
    expect(ms).toBeLessThan(QUICK_MS);
    // The same schema, a few levels deep, is applied: the object lacks the required key.
    const shallow = { $defs: Object.fromEntries(Object.entries($defs).slice(0, 4)), $ref: "#/$defs/d3" };
    expect(check({ a: 1 }, shallow)).toEqual({ refused: ["arguments.never"] });
  });

  it("does not apply a schema that many arguments would each try in many ways", () => {
    const branches = Array.from({ length: 200 }, (_, i) => ({ const: `v${i}` }));
    const schema = { type: "object", properties: { list: { type: "array", items: { anyOf: branches } } } };
    const many = { list: Array.from({ length: 2 * Math.ceil(CHECK_BUDGET / branches.length) }, () => 1) };
    const { result, ms } = timed(() => check(many, schema));
    expect(result).toBe(JSON.stringify(many));
    expect(ms).toBeLessThan(QUICK_MS);
    // A few arguments are checked against the same schema.
    expect(check({ list: ["v3", 1] }, schema)).toEqual({ refused: ["arguments.list.1"] });
  });
});

describe("edited arguments holding numbers", () => {
  it("refuses an integer past ±(2^53 - 1) or a number past the double range, naming its path; accepts the rest", () => {
    // 9007199254740993 as a JSON body carries it: parsed, it is 9007199254740992 already.
    expect(check(JSON.parse('{"account":9007199254740993}'), {})).toEqual({ refused: ["arguments.account"] });
    expect(check(JSON.parse('{"to":[{"id":1},{"id":-9007199254740993}]}'), {})).toEqual({ refused: ["arguments.to.1.id"] });
    expect(check(JSON.parse('{"big":1e400}'), {})).toEqual({ refused: ["arguments.big"] });
    expect(check(JSON.parse('{"a":1,"b":{"c":2e300}}'), {})).toEqual({ refused: ["arguments.b.c"] });
    expect(check({ account: 9007199254740991, ratio: 0.1, negative: -9007199254740991 }, {})).toBe(
      '{"account":9007199254740991,"ratio":0.1,"negative":-9007199254740991}',
    );
  });
});
