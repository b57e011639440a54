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
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i]!;
    if (char === '"') {
      i = closingQuote(text, i);
    } else if (char === "-" || (char >= "0" && char <= "9")) {
      const token = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400))?.[0] ?? char;
      if (!exact(token)) return token.length > 40 ? `${token.slice(0, 40)}…` : token;
      i += token.length - 1;
    }
  }
  return undefined;
}

/** Whether the double JSON.parse makes of `token` is the number it writes, as far as a reader can tell. */
function exact(token: string): boolean {
  const value = Number(token);
  if (!Number.isFinite(value)) return false;
  const [mantissa = "", exponent] = token.replace(/^-/, "").toLowerCase().split("e");
  const digits = mantissa.replace(".", "").replace(/^0+/, "");
  // Underflow: written digits other than zeros, read as zero.
  if (value === 0) return digits.replace(/0/g, "") === "";
  // An integer written in full is compared exactly; a fraction or an exponent form reads as its
  // nearest double, which is what its reader takes it for.
  if (exponent === undefined && !mantissa.includes(".")) return BigInt(token) === BigInt(value);
  return true;
}
