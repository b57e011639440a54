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
// - two keys of one object, not both ASCII, that read alike: the same once put in compatibility
//   form (NFKC: `ｃommand`, `ﬁle`), lower-cased, and with the look-alike letters of those scripts
//   read as the Latin ones (`СОРУ` and `copy`). Two ASCII keys are never look-alikes: `Id` and
//   `id` are told apart by a person, and an ordinary tool's keys are ASCII;
// - at the outermost object, a key that is not ASCII when the tool's input schema declares its
//   properties and that key is not one of them: the tool would not read it as any declared one,
//   while a person may read it as one (`сору` for `copy`);
// - at the outermost object, an ASCII key the schema does not declare that reads loosely as one it
//   does: the same once case-folded, without whitespace, `_` or `-`, with `rn` as `m`, `vv` as `w`,
//   `I`, `l`, `1` and `|` as one letter and `0` as `o` (`Command`, `comrnand`, `fiIe`, `command `
//   next to a declared `command`): the page shows two keys a person reads as one, the tool one.
// None of these refuses a call whose keys are ASCII and its tool's own: no ordinary call is refused.
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
 * `text` is not JSON). `declared`: the properties the tool's input schema declares, when it does.
 */
export function unreadableKey(text: string, declared?: ReadonlySet<string> | null): KeyProblem | undefined {
  let problem: KeyProblem | undefined;
  // Per open object (by its set of keys so far): the skeletons of its non-ASCII-bearing keys and of all its keys.
  const skeletons = new WeakMap<ReadonlySet<string>, Map<string, string>>();
  const loose = declared ? looseForms(declared) : null;
  eachKey(text, (key, before, depth) => {
    problem = problemOf(key, before, depth, declared ?? null, skeletons) ?? likeDeclared(key, depth, declared ?? null, loose);
    return problem !== undefined;
  });
  return problem;
}

function problemOf(
  key: string,
  before: ReadonlySet<string>,
  depth: number,
  declared: ReadonlySet<string> | null,
  skeletons: WeakMap<ReadonlySet<string>, Map<string, string>>,
): KeyProblem | undefined {
  if (before.has(key)) return { kind: "repeated", key };
  if (HIDDEN_IN_KEY.test(key)) return { kind: "hidden", key };
  if (scriptsOf(key) > 1) return { kind: "mixedScripts", key };
  let seen = skeletons.get(before);
  if (!seen) skeletons.set(before, (seen = new Map()));
  const skeleton = skeletonOf(key);
  const like = seen.get(skeleton);
  if (like !== undefined && !(ASCII.test(key) && ASCII.test(like))) return { kind: "lookAlike", key, like };
  if (like === undefined) seen.set(skeleton, key);
  if (depth === 1 && declared !== null && !ASCII.test(key) && !declared.has(key)) return { kind: "undeclared", key };
  return undefined;
}

const ASCII = /^[\x20-\x7E]*$/;

/** A key of the outermost object the schema does not declare that reads loosely as one it does. */
function likeDeclared(key: string, depth: number, declared: ReadonlySet<string> | null, loose: ReadonlyMap<string, string> | null): KeyProblem | undefined {
  if (depth !== 1 || declared === null || loose === null || declared.has(key)) return undefined;
  const like = loose.get(looseOf(key));
  return like === undefined ? undefined : { kind: "likeDeclared", key, like };
}

/** The declared properties by their loose forms (the first one of each form). */
function looseForms(declared: ReadonlySet<string>): Map<string, string> {
  const forms = new Map<string, string>();
  for (const name of declared) if (!forms.has(looseOf(name))) forms.set(looseOf(name), name);
  return forms;
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
