// Numbers written for people, with their thousands grouped: "100,000". The same text as
// `n.toLocaleString("en")`, without Intl: the first locale-aware call loads the ICU data of the
// node binary, about 8–10 MB resident for the process's life, and the server writes such numbers
// into its schema's descriptions and its validation messages at start (issue 43, goal 6).

/** `n` with a comma between each group of three digits of its integer part: 1234567.5 → "1,234,567.5". */
export function groupedDigits(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const [whole = "", fraction] = String(Math.abs(n)).split(".");
  // Numbers past 1e21 are written in exponent form: left as they are.
  if (/e/i.test(whole)) return String(n);
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${n < 0 ? "-" : ""}${grouped}${fraction === undefined ? "" : `.${fraction}`}`;
}
