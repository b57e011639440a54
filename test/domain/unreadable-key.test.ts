// Keys of a held call's arguments that a person could read as another key than the one the tool
// gets: repeated, holding an invisible character, mixing look-alike scripts, reading alike with
// another key of their object (at any depth, with or without a schema), or undeclared by the
// tool's schema for their object and non-ASCII or reading loosely as a declared one. Ordinary keys
// pass.
import { describe, expect, it } from "vitest";
import { unreadableKey } from "../../src/domain/text/unreadable-key.js";

/** An object schema declaring `names` (each a string, or the schema given). */
const object = (...names: (string | [string, unknown])[]) => ({
  type: "object",
  properties: Object.fromEntries(names.map((name) => (typeof name === "string" ? [name, { type: "string" }] : name))),
});
const padded = (decoy: string, real: string) => `{${decoy},${Array.from({ length: 300 }, (_, i) => `"p${i}":"x"`).join(",")},${real}}`;

describe("unreadableKey", () => {
  it("finds a look-alike decoy before the real key, however far apart", () => {
    // A Cyrillic а: one key mixing scripts.
    expect(unreadableKey(padded('"comm\u0430nd":"ls"', '"command":"rm"'))).toEqual({ kind: "mixedScripts", key: "comm\u0430nd" });
    // An unassigned default-ignorable code point, which a browser draws as nothing.
    expect(unreadableKey(padded('"comm\u2065and":"ls"', '"command":"rm"'))).toEqual({ kind: "hidden", key: "comm\u2065and" });
    expect(unreadableKey('{"a\u{E0FFF}":1}')).toEqual({ kind: "hidden", key: "a\u{E0FFF}" });
    expect(unreadableKey('{"a\\ufff0":1}')).toEqual({ kind: "hidden", key: "a\uFFF0" });
    // Whole keys of another script, or in compatibility forms, that read as an ASCII key of the same object.
    expect(unreadableKey(padded('"\u0421\u041E\u0420\u0423":"a"', '"copy":"b"'))).toEqual({ kind: "lookAlike", key: "copy", like: "\u0421\u041E\u0420\u0423" });
    expect(unreadableKey('{"\uFF43ommand":"ls","command":"rm"}')).toEqual({ kind: "lookAlike", key: "command", like: "\uFF43ommand" });
    expect(unreadableKey('{"\uFB01le":"a","file":"b"}')).toEqual({ kind: "lookAlike", key: "file", like: "\uFB01le" });
    expect(unreadableKey('{"caf\u00E9":1,"cafe\u0301":2}')).toEqual({ kind: "lookAlike", key: "cafe\u0301", like: "caf\u00E9" });
    // At any depth, and a repeated key as before.
    expect(unreadableKey('{"o":{"x":[{"\u0440\u0430\u0442\u04BB":1,"path":2}]}}')).toEqual({
      kind: "lookAlike",
      key: "path",
      like: "\u0440\u0430\u0442\u04BB",
    });
    expect(unreadableKey('{"a":1,"\\u0061":2}')).toEqual({ kind: "repeated", key: "a" });
  });

  it("finds a non-ASCII key of the outermost object that the tool's schema does not declare", () => {
    const declared = object("copy", "target", "naïve");
    expect(unreadableKey('{"\u0441\u043E\u0440\u0443":"x"}', declared)).toEqual({ kind: "undeclared", key: "\u0441\u043E\u0440\u0443" });
    expect(unreadableKey('{"naïve":1,"target":"x","extra":1,"o":{"ключ":1}}', declared)).toBeUndefined();
    expect(unreadableKey('{"\u0441\u043E\u0440\u0443":"x"}')).toBeUndefined();
  });

  it("finds an ASCII key of the outermost object that the schema does not declare and that reads loosely as a declared one", () => {
    const declared = object("command", "file", "target_path", "count");
    const like = (key: string) => ({ kind: "likeDeclared", key, like: expect.any(String) });
    expect(unreadableKey(padded('"Command":"ls"', '"command":"rm"'), declared)).toEqual({ kind: "likeDeclared", key: "Command", like: "command" });
    for (const decoy of ["comrnand", "COMMAND", "command ", " command", "com mand", "fiIe", "fi1e", "FILE", "targetPath", "target-path", "c0unt"]) {
      expect(unreadableKey(`{${JSON.stringify(decoy)}:"x"}`, declared), decoy).toEqual(like(decoy));
    }
    // Declared keys only, and undeclared keys that read as none of them, pass; so does a lone key of an object the schema does not describe.
    expect(unreadableKey('{"command":"rm","file":"a","target_path":"b","count":1,"extra":2,"o":{"Command":1}}', declared)).toBeUndefined();
  });

  it("passes ordinary keys: ASCII ones plainly apart, one script, keys in different objects, not JSON", () => {
    expect(unreadableKey('{"id":1,"ids":2,"name":3,"names":4,"a":5,"b":6,"file":7,"files":8,"l0":9,"lo0":10,"user_id":11,"username":12}')).toBeUndefined();
    expect(unreadableKey('{"名前":"x","なまえ":"y","ключ":1,"ключи":2,"αβγ":3,"naïve":4,"Straße":5}')).toBeUndefined();
    expect(unreadableKey('{"a":{"path":1},"b":{"\u0440\u0430\u0442\u04BB":2}}')).toBeUndefined();
    expect(unreadableKey('{"command":"сomm\u0430nd \u2065"}')).toBeUndefined();
    expect(unreadableKey('{"a":1,')).toBeUndefined();
  });
});

describe("unreadableKey at every depth and without a schema", () => {
  const filler = Array.from({ length: 300 }, (_, i) => `"k${i}":0`).join(",");
  const file = object("name", "path");
  const schema = object(
    "name",
    ["file", file],
    ["files", { type: "array", items: { $ref: "#/$defs/file" } }],
    ["more", { anyOf: [{ $ref: "#/$defs/file" }, { type: "null" }] }],
  );
  Object.assign(schema, { $defs: { file } });

  it("refuses two keys of one object that read alike, however deep and whatever the schema declares", () => {
    const nested = `{"file":{"narne":"notes.txt",${filler},"name":"/etc/shadow"}}`;
    const top = `{"narne":"notes.txt",${filler},"name":"/etc/shadow"}`;
    for (const declared of [null, { type: "object" }, { type: "object", properties: {} }]) {
      expect(unreadableKey(nested, declared)).toEqual({ kind: "lookAlike", key: "name", like: "narne" });
      expect(unreadableKey(top, declared)).toEqual({ kind: "lookAlike", key: "name", like: "narne" });
    }
    // Where the schema declares `name`, the decoy is refused on its own, before the real key.
    expect(unreadableKey(nested, schema)).toEqual({ kind: "likeDeclared", key: "narne", like: "name" });
    expect(unreadableKey(top, schema)).toEqual({ kind: "likeDeclared", key: "narne", like: "name" });
    for (const [decoy, real] of [
      ["path ", "path"],
      ["Name", "name"],
      ["Command", "command"],
      ["fiIe", "file"],
      ["user_id", "userId"],
      ["l0", "lo"],
    ]) {
      const text = `{"a":[{"o":{${JSON.stringify(decoy)}:1,${filler},${JSON.stringify(real)}:2}}]}`;
      expect(unreadableKey(text), decoy).toEqual({ kind: "lookAlike", key: real, like: decoy });
    }
  });

  it("reads a nested object's keys against the properties its schema declares there", () => {
    const likeName = (key: string) => ({ kind: "likeDeclared", key, like: "name" });
    expect(unreadableKey('{"file":{"Name":"/etc/shadow"}}', schema)).toEqual(likeName("Name"));
    expect(unreadableKey('{"files":[{"name":"a"},{"narne":"b"}]}', schema)).toEqual(likeName("narne"));
    expect(unreadableKey('{"more":{"name ":"a"}}', schema)).toEqual(likeName("name "));
    expect(unreadableKey('{"file":{"\u043F\u0430\u0442\u04BB":"a"}}', schema)).toEqual({ kind: "undeclared", key: "\u043F\u0430\u0442\u04BB" });
    // Where the schema describes no object, only the object's own keys are compared.
    expect(unreadableKey('{"file":{"name":"a","extra":{"Name":1,"\u043A\u043B\u044E\u0447":2}}}', schema)).toBeUndefined();
  });

  it("passes honest nested payloads", () => {
    const honest = '{"name":"n","file":{"name":"a","path":"/tmp/a"},"files":[{"name":"b","path":"c"},{"name":"d"}],"more":null}';
    expect(unreadableKey(honest, schema)).toBeUndefined();
    expect(unreadableKey(honest)).toBeUndefined();
    const ordinary = '{"query":{"ids":[1,2],"id":3,"filter":{"name":"x","names":["y"],"a":1,"b":2}},"page":{"size":10,"sizes":[10,20]}}';
    expect(unreadableKey(ordinary, { type: "object" })).toBeUndefined();
    // A schema that refers to itself, or to what it does not hold, declares what it can.
    const loop = { type: "object", properties: { next: { $ref: "#" }, id: {} }, allOf: [{ $ref: "#" }, { $ref: "#/$defs/none" }] };
    expect(unreadableKey('{"id":1,"next":{"id":2,"next":{"Id":3}}}', loop)).toEqual({ kind: "likeDeclared", key: "Id", like: "id" });
    expect(unreadableKey('{"id":1,"next":{"id":2,"next":{"ids":3}}}', loop)).toBeUndefined();
  });
});
