// The first key a JSON text repeats within one object: keys compared decoded, at any depth, in
// one pass (a text nested far deeper than a recursive reader could go is read all the same).
import { describe, expect, it } from "vitest";
import { repeatedKey } from "../../src/domain/text/repeated-key.js";

describe("repeatedKey", () => {
  it("finds a key given twice in one object, decoded, at any depth", () => {
    expect(repeatedKey('{"a":1,"b":2,"a":3}')).toBe("a");
    expect(repeatedKey('{"x":[{"k":1},{"k":2,"j":{"q":"}","q":"]"}}]}')).toBe("q");
    expect(repeatedKey('{"co\\u006dmand":"ls","command":"rm"}')).toBe("command");
    expect(repeatedKey('{"a\\"b":1,"a\\"b":2}')).toBe('a"b');
    expect(repeatedKey(`${"[".repeat(50_000)}{"a":1,"a":2}${"]".repeat(50_000)}`)).toBe("a");
  });

  it("finds none in the same key in different objects, a key as a value, invalid JSON or no object at all", () => {
    expect(repeatedKey('{"a":"a","b":{"a":1},"c":[{"a":1},{"a":2}]}')).toBeUndefined();
    expect(repeatedKey('{"a":1,"a":')).toBeUndefined();
    expect(repeatedKey('["a","a"]')).toBeUndefined();
    expect(repeatedKey('"{\\"a\\":1,\\"a\\":2}"')).toBeUndefined();
    expect(repeatedKey("")).toBeUndefined();
  });
});
