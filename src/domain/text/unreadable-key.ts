// The first object key of a JSON text that a person could read as another key than the one a
// tool gets. A held call is shown as its arguments' text; a key a person misreads runs as what
// they did not approve (`{"commаnd":"ls", …300 keys…, "command":"rm"}`, the first `а` Cyrillic:
// the page shows `"command":"ls"` first while the tool reads command=rm). Refused, at any depth:
//
// - a key given twice in one object (repeated-key.ts: JSON.parse keeps the last value);
// - a key holding a character a person does not see: a default-ignorable code point (U+2065,
//   U+FFF0, the tag characters U+E0000–E0FFF; browsers draw them as nothing), any other format
//   or control character, a line or paragraph separator;
// - a key whose letters come from more than one of the scripts that share look-alike letters
//   (Latin, Greek, Cyrillic, Armenian, Cherokee): `commаnd` with a Cyrillic `а`;
// - two keys of one object that read alike: the same once put in compatibility form (NFKC:
//   `ｃommand`, `ﬁle`), case-folded, with the look-alike letters of those scripts read as the Latin
//   ones (`СОРУ` and `copy`), without whitespace, `_` or `-`, with `rn` as `m`, `vv` as `w`, `I`,
//   `l`, `1` and `|` as one letter and `0` as `o` (`narne` and `name`, `Name` and `name`, `path `
//   and `path`): the page shows two keys a person reads as one, while the tool reads each as
//   itself. With or without a schema (an MCP tool's may declare no properties at all);
// - where the tool's input schema declares the properties of the key's object (the outermost one,
//   or one nested under declared properties, array items, references: text/declared-keys.ts), a
//   key that is not one of them and is not ASCII (the tool would not read it as any declared one,
//   while a person may read it as one: `сору` for `copy`), or that reads alike with one of them
//   (`Command`, `comrnand`, `fiIe`, `command ` next to a declared `command`).
// None of these refuses a call whose keys are ASCII, its tool's own and plainly apart (`id` and
// `ids`, `name` and `names`): no ordinary call is refused.
import { declaredKeys } from "./declared-keys.js";
import { eachKey } from "./repeated-key.js";

export type KeyProblem =
  | { kind: "repeated"; key: string }
  | { kind: "hidden"; key: string }
  | { kind: "mixedScripts"; key: string }
  | { kind: "lookAlike"; key: string; like: string }
  | { kind: "undeclared"; key: string }
  | { kind: "likeDeclared"; key: string; like: string };

/**
 * The first key of `text` a person could read as another (see above), or undefined (also when
 * `text` is not JSON). `schema`: the tool's input schema, when it has one.
 */
export function unreadableKey(text: string, schema?: Record<string, unknown> | null): KeyProblem | undefined {
  let problem: KeyProblem | undefined;
  // Per open object (by its set of keys so far): the loose forms of its keys so far, and the properties its schema declares.
  const objects = new WeakMap<ReadonlySet<string>, { seen: Map<string, string>; declared: Declared | null }>();
  const declaredAt = declaredKeys(schema);
  const loose = new WeakMap<ReadonlyMap<string, unknown>, Declared>();
  eachKey(text, (key, before, _depth, trail) => {
    let object = objects.get(before);
    if (!object) objects.set(before, (object = { seen: new Map(), declared: declaredOf(declaredAt(trail), loose) }));
    problem = problemOf(key, before, object.seen) ?? againstDeclared(key, object.declared);
    return problem !== undefined;
  });
  return problem;
}

/** The properties an object's schema declares, and the first of them by each loose form. */
type Declared = { names: ReadonlyMap<string, unknown>; byLoose: ReadonlyMap<string, string> };

function declaredOf(names: ReadonlyMap<string, unknown> | null, known: WeakMap<ReadonlyMap<string, unknown>, Declared>): Declared | null {
  if (names === null) return null;
  let declared = known.get(names);
  if (!declared) {
    const byLoose = new Map<string, string>();
    for (const name of names.keys()) {
      const form = looseOf(name);
      if (!byLoose.has(form)) byLoose.set(form, name);
    }
    known.set(names, (declared = { names, byLoose }));
  }
  return declared;
}

/** A problem of `key` itself or with a key before it in its object (`seen`: their loose forms). */
function problemOf(key: string, before: ReadonlySet<string>, seen: Map<string, string>): KeyProblem | undefined {
  if (before.has(key)) return { kind: "repeated", key };
  if (HIDDEN_IN_KEY.test(key)) return { kind: "hidden", key };
  if (scriptsOf(key) > 1) return { kind: "mixedScripts", key };
  const form = looseOf(key);
  const like = seen.get(form);
  if (like !== undefined) return { kind: "lookAlike", key, like };
  seen.set(form, key);
  return undefined;
}

const ASCII = /^[\x20-\x7E]*$/;

/** A key its object's schema does not declare that is not ASCII or reads alike with one it does. */
function againstDeclared(key: string, declared: Declared | null): KeyProblem | undefined {
  if (declared === null || declared.names.has(key)) return undefined;
  if (!ASCII.test(key)) return { kind: "undeclared", key };
  const like = declared.byLoose.get(looseOf(key));
  return like === undefined ? undefined : { kind: "likeDeclared", key, like };
}

/** What `key` reads as at a glance: its skeleton without whitespace or separators, letters a glance confuses as one. */
function looseOf(key: string): string {
  return skeletonOf(key)
    .replace(/[\s_-]/gu, "")
    .replaceAll("rn", "m")
    .replaceAll("vv", "w")
    .replace(/[il1|]/g, "l")
    .replaceAll("0", "o");
}

/** Characters a person does not see, in a key: default-ignorable code points, format and control characters, line and paragraph separators. */
const HIDDEN_IN_KEY = /[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Cc}\u2028\u2029]/u;

/** The scripts whose letters are mistaken for one another's. */
const SCRIPTS = [/\p{Script=Latin}/u, /\p{Script=Greek}/u, /\p{Script=Cyrillic}/u, /\p{Script=Armenian}/u, /\p{Script=Cherokee}/u];

/** How many of SCRIPTS the letters of `key` come from. */
function scriptsOf(key: string): number {
  const letters = [...key].filter((char) => /\p{L}/u.test(char));
  return SCRIPTS.filter((script) => letters.some((letter) => script.test(letter))).length;
}

/** Look-alikes of Latin letters in Greek, Cyrillic, Armenian and Latin itself, as the Latin letter; upper case first. */
const UPPER_ALIKES = pairs("АAВBЕEЅSІIЈJКKМMНHОOРPСCТTУYХXԚQԜWΑAΒBΕEΖZΗHΙIΚKΜMΝNΟOΡPΤTΥYΧX");
const LOWER_ALIKES = pairs("аaеeёeоoрpсcуyхxѕsіiјjԁdԛqԝwһhӏlүyкkмmтtвbнhпnαaοoρpνvιiκkυuχxγyωwεeϲcϳjηnμuτtօoսuհhոnցgզqɑaɡgıi");

function pairs(text: string): Map<string, string> {
  const chars = [...text];
  return new Map(chars.flatMap((char, i) => (i % 2 === 0 ? [[char, chars[i + 1]!] as const] : [])));
}

/** What `key` reads as (only to tell two keys apart): compatibility form, default-ignorables dropped, look-alike letters as Latin, lower case. */
function skeletonOf(key: string): string {
  const plain = key.normalize("NFKC").replace(/\p{Default_Ignorable_Code_Point}/gu, "");
  const upper = [...plain]
    .map((char) => UPPER_ALIKES.get(char) ?? char)
    .join("")
    .toLowerCase();
  return [...upper].map((char) => LOWER_ALIKES.get(char) ?? char).join("");
}
