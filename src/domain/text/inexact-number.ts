// The first number of a JSON text that does not mean what it says once parsed: JSON.parse reads
// `9007199254740993` as 9007199254740992, `1e400` as Infinity (sent on as null) and `1e-400` as 0,
// while a person reading the text reads the digits. A held call whose arguments hold such a number
// cannot be shown to a person as what it will run. One pass; strings are skipped.
import { closingQuote } from "./repeated-key.js";

/** The first number token of `text` whose parsed value differs from its digits, or undefined (also when `text` is not JSON). */
export function inexactNumber(text: string): string | undefined {
  try {
    JSON.parse(text);
  } catch {
    return undefined;
  }
  const number = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i]!;
    if (char === '"') {
      i = closingQuote(text, i);
    } else if (char === "-" || (char >= "0" && char <= "9")) {
      number.lastIndex = i;
      const token = number.exec(text)?.[0] ?? char;
      if (!exact(token)) return token.length > 40 ? `${token.slice(0, 40)}…` : token;
      i += token.length - 1;
    }
  }
  return undefined;
}

/**
 * Whether the double JSON.parse makes of `token` is the number it writes: the shortest decimal
 * that reads back as that double (String(value)) names the same number as the token. So `0.1`
 * and `1e2` are exact, `9007199254740993`, `9007199254740993.0`, `1.00000000000000000001`, `1e400`
 * and `1e-400` are not. A whole number written in digits past ±(2^53 - 1) must also be the
 * double's exact value: `100000000000000000000000` has the shortest form `1e+23`, yet the double is
 * 99999999999999991611392, and a tool reading integers exactly would get that. `9007199254740992`
 * (2^53) is exact; edited arguments refuse every integer past ±(2^53 - 1) (tool-arguments.ts).
 */
function exact(token: string): boolean {
  const value = Number(token);
  if (!Number.isFinite(value) || normalized(token) !== normalized(String(value))) return false;
  return !/^-?\d+$/.test(token) || Number.isSafeInteger(value) || BigInt(token) === BigInt(value);
}

/** A decimal number as sign, significant digits and exponent: `-1.50e2` and `-150` are both "-15e1". */
function normalized(decimal: string): string {
  const negative = decimal.startsWith("-");
  const [mantissa = "", exponent = "0"] = decimal.replace(/^-/, "").toLowerCase().split("e");
  const [whole = "", fraction = ""] = mantissa.split(".");
  let digits = `${whole}${fraction}`.replace(/^0+/, "");
  let power = Number(exponent) - fraction.length;
  const trailing = /0*$/.exec(digits)![0].length;
  digits = digits.slice(0, digits.length - trailing);
  power += trailing;
  return digits === "" ? "0" : `${negative ? "-" : ""}${digits}e${power}`;
}
