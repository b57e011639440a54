// Keys of a held call's arguments that a person could read as another key than the one the tool
// gets: repeated, holding an invisible character, mixing look-alike scripts, reading alike with
// another key of their object, or undeclared by the tool and non-ASCII or reading loosely as a
// declared one. Ordinary keys pass.
import { describe, expect, it } from "vitest";
import { unreadableKey } from "../../src/domain/text/unreadable-key.js";

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
    const declared = new Set(["copy", "target", "naïve"]);
    expect(unreadableKey('{"\u0441\u043E\u0440\u0443":"x"}', declared)).toEqual({ kind: "undeclared", key: "\u0441\u043E\u0440\u0443" });
    expect(unreadableKey('{"naïve":1,"target":"x","extra":1,"o":{"ключ":1}}', declared)).toBeUndefined();
    expect(unreadableKey('{"\u0441\u043E\u0440\u0443":"x"}')).toBeUndefined();
  });

  it("finds an ASCII key of the outermost object that the schema does not declare and that reads loosely as a declared one", () => {
    const declared = new Set(["command", "file", "target_path", "count"]);
    const like = (key: string) => ({ kind: "likeDeclared", key, like: expect.any(String) });
    expect(unreadableKey(padded('"Command":"ls"', '"command":"rm"'), declared)).toEqual({ kind: "likeDeclared", key: "Command", like: "command" });
    for (const decoy of ["comrnand", "COMMAND", "command ", " command", "com mand", "fiIe", "fi1e", "FILE", "targetPath", "target-path", "c0unt"]) {
      expect(unreadableKey(`{${JSON.stringify(decoy)}:"x"}`, declared), decoy).toEqual(like(decoy));
    }
    // Declared keys only, and undeclared keys that read as none of them, pass; so does any key at depth, or without a schema.
    expect(unreadableKey('{"command":"rm","file":"a","target_path":"b","count":1,"extra":2,"o":{"Command":1}}', declared)).toBeUndefined();
    expect(unreadableKey('{"Command":"ls","command":"rm"}')).toBeUndefined();
  });

  it("passes ordinary keys: ASCII ones differing in case, one script, keys in different objects, not JSON", () => {
    expect(unreadableKey('{"Id":1,"id":2,"file":3,"fiIe":4,"l0":5,"lo":6}')).toBeUndefined();
    expect(unreadableKey('{"名前":"x","なまえ":"y","ключ":1,"ключи":2,"αβγ":3,"naïve":4,"Straße":5}')).toBeUndefined();
    expect(unreadableKey('{"a":{"path":1},"b":{"\u0440\u0430\u0442\u04BB":2}}')).toBeUndefined();
    expect(unreadableKey('{"command":"сomm\u0430nd \u2065"}')).toBeUndefined();
    expect(unreadableKey('{"a":1,')).toBeUndefined();
  });
});
