// The trace viewer's browser script, formatting helpers shared by the tree and the details
// panel: building elements, durations, token counts, the labels of event kinds and the budget
// gauge. Everything from the API is put in the page with textContent, never as HTML.
import { BLANK_NAMES, BLANK_RUN } from "../../../sdk/readable-arguments.js";
import { MIXED_SCRIPT_MARK, VISIBLE_PART } from "../../../sdk/visible-text.js";

export const FORMAT_SCRIPT = String.raw`
// ---- formatting -------------------------------------------------------------------------------
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

// Changing only what differs: an element kept across renders (the tree's) is left untouched when it already shows the value.
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}
function setAttr(node, name, value) {
  if (node.getAttribute(name) !== value) node.setAttribute(name, value);
}
function setData(node, name, value) {
  if (node.dataset[name] !== value) node.dataset[name] = value;
}
function setStyle(node, property, value) {
  if (node.style.getPropertyValue(property) !== value) node.style.setProperty(property, value);
}

// What visibleEl marks (the SDK's VISIBLE_PART): characters a person does not see, or sees as a
// plain space (bidi controls, zero-width and other format characters, control characters, blanks
// other than U+0020), and words that mix Latin, Greek and Cyrillic letters, which can look alike.
const VISIBLE_PART = ${VISIBLE_PART};
const MIXED_SCRIPT_MARK = ${JSON.stringify(MIXED_SCRIPT_MARK)};
const SCRIPTS = [["Latin", /\p{Script=Latin}/u], ["Greek", /\p{Script=Greek}/u], ["Cyrillic", /\p{Script=Cyrillic}/u]];
const codePoint = (c) => c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");

/** Why a word is marked: the SDK's mixedScriptNote, word for word. */
function mixedScriptNote(word) {
  const present = SCRIPTS.filter(([, script]) => script.test(word));
  const first = present[0];
  const others = [...new Set([...word].filter((c) => !first[1].test(c) && present.some(([, script]) => script.test(c))))];
  const names = present.map(([name]) => name);
  return '"' + word + '" mixes ' + names.slice(0, -1).join(", ") + " and " + names.at(-1) + " letters, which can look alike: " +
    others.map((c) => c + " (U+" + codePoint(c) + ")").join(", ") + (others.length > 1 ? " are" : " is") + " not " + first[0];
}

/**
 * An element showing text a person approves (a held call's tool name and arguments): each hidden
 * character appears as its escape (\u202E) in a marked span, never removed and never applied, each
 * word that mixes scripts ("gіthub" with a Cyrillic і) after a ⚠ in a marked span whose title says
 * which letters are not what they look like, and every character stands left to right in the order
 * it is stored (class "as-stored": direction ltr, bidi override, spaces kept as they are), so
 * ordinary right-to-left letters cannot reorder the digits or words around them ("ח 4417 1234"
 * never reads "1234 4417 ח"): what is read is what runs. Only the page's rendering changes: the
 * text itself is untouched.
 */
function visibleEl(tag, className, text) {
  const node = asStoredEl(tag, className);
  appendVisible(node, text === undefined || text === null ? "" : String(text));
  return node;
}

function asStoredEl(tag, className) {
  const node = el(tag, className);
  node.classList.add("as-stored");
  node.dir = "ltr";
  return node;
}

/** Appends value to node as visibleEl shows it. A ⚠ of the value's own is shown as its escape: every ⚠ shown is the page's mark. */
function appendVisible(node, value) {
  let last = 0;
  for (const match of value.matchAll(VISIBLE_PART)) {
    if (match.index > last) node.append(value.slice(last, match.index));
    if (match[1] === undefined) {
      const word = el("span", "mixed-script", MIXED_SCRIPT_MARK + match[0]);
      word.title = mixedScriptNote(match[0]);
      node.append(word);
    } else {
      // A stack of marks shows each of its marks so.
      for (const character of match[0]) {
        const hex = character.codePointAt(0).toString(16).toUpperCase();
        const escape = el("span", "hidden-char", hex.length > 4 ? "\\u{" + hex + "}" : "\\u" + hex.padStart(4, "0"));
        escape.title = character === MIXED_SCRIPT_MARK
          ? "U+26A0, a ⚠ the text holds itself: every ⚠ shown otherwise is the page's own mark"
          : "U+" + hex.padStart(4, "0") + ", a character that is not shown as it is (it may look blank, or reorder, cover or hide the text around it)";
        node.append(escape);
      }
    }
    last = match.index + match[0].length;
  }
  if (last < value.length) node.append(value.slice(last));
}

// ---- a held call's arguments as a person reads them (the SDK's readableArguments) ----------------
/** The arguments as the call runs them, as JSON: {} for none, the model's text when it is not JSON. */
function decodedArguments(raw) {
  if (raw.trim() === "") return "{}";
  try {
    return JSON.stringify(JSON.parse(raw));
  } catch {
    return raw;
  }
}

// A run of more than 32 blanks in the arguments as JSON (the SDK's BLANK_RUN, its group), which
// would push what follows out of view; an escaped backslash is passed over (\\n is no line break).
const BLANK_RUN = ${BLANK_RUN};
const BLANK_NAMES = ${JSON.stringify(BLANK_NAMES)};

/** A run of blanks as its count: the SDK's blankRunMark, word for word ("⚠[38 spaces, 2 line breaks]"). */
function blankRunMark(run) {
  const counts = new Map(["space", "tab", "line break", "carriage return"].map((name) => [name, 0]));
  for (const [blank] of run.matchAll(/\\[tnr]|[ \t\n\r]/g)) counts.set(BLANK_NAMES[blank], counts.get(BLANK_NAMES[blank]) + 1);
  const kinds = [...counts].filter(([, n]) => n > 0).map(([name, n]) => n + " " + name + (n === 1 ? "" : "s"));
  return MIXED_SCRIPT_MARK + "[" + kinds.join(", ") + "]";
}

/**
 * Appends a call's arguments as the tool gets them (decodedArguments: \u0072\u006d reads rm), each
 * long run of blanks as its count in a marked span, the rest as visibleEl shows it: the SDK's
 * readableArguments text, marked. oneLine (a row of the tree): tabs and line breaks of text that
 * is not JSON read as spaces, one for one.
 */
function appendArguments(node, raw, oneLine) {
  const decoded = decodedArguments(typeof raw === "string" ? raw : JSON.stringify(raw === undefined ? {} : raw));
  const plain = (text) => appendVisible(node, oneLine ? text.replace(/[\t\n\r]/g, " ") : text);
  let last = 0;
  for (const match of decoded.matchAll(BLANK_RUN)) {
    if (match[1] === undefined) continue;
    if (match.index > last) plain(decoded.slice(last, match.index));
    const run = el("span", "blank-run", blankRunMark(match[1]));
    run.title = "A run of blanks, shown as its count: it would push what follows out of view";
    node.append(run);
    last = match.index + match[0].length;
  }
  if (last < decoded.length) plain(decoded.slice(last));
  return node;
}

const argumentsEl = (tag, className, raw, oneLine) => appendArguments(asStoredEl(tag, className), raw, oneLine);

/** The server's warnings for a held call's arguments (ToolApproval.readableArguments.warnings), each above them. */
const warningEls = (warnings) =>
  warnings.map((text) => {
    const warning = el("b", "args-warning", "⚠ " + text);
    warning.dataset.testid = "arguments-warning";
    return warning;
  });

/**
 * What a person approves of a call's arguments: the values the tool gets, whatever escapes the model
 * wrote them with, shown by argumentsEl, and above them the server's warning for each kind of
 * character that was hidden or disguised (ToolApproval.readableArguments.warnings).
 */
function argumentsEls(raw, warnings) {
  return [...warningEls(warnings), argumentsEl("span", "args", raw)];
}

/** The request a WAITING run's call waits on, for the call's span (its APPROVAL_REQUESTED event names the call), or null. */
function heldCallOf(span) {
  const pending = (state.run && state.run.status === "WAITING" && state.run.pendingApprovals) || [];
  return pending.find((approval) => {
    const marker = '"toolCallId":' + JSON.stringify(approval.toolCallId);
    return span.events.some((e) => e.kind === "APPROVAL_REQUESTED" && e.preview.includes(marker));
  }) || null;
}

/** Events that carry a tool call's name or arguments, shown as a person approving the call reads them (visibleEl). */
const CALL_EVENTS = new Set(["APPROVAL_REQUESTED", "APPROVAL_DECIDED", "TOOL_INPUT"]);

const numberFormat = new Intl.NumberFormat("en-US");
const int = (n) => numberFormat.format(n || 0);
/** A token count in few characters: exact below 10,000, else thousands ("105.3k"). */
const short = (n) => (Math.abs(n) < 10000 ? int(n) : (Math.round(n / 100) / 10).toString() + "k");

function formatMs(ms) {
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
  const minutes = Math.floor(ms / 60000);
  return minutes + " min " + Math.round((ms % 60000) / 1000) + " s";
}

/** The server's clock as the page estimates it: spans are timed by the server, "now" by the browser. */
const serverNow = () => Date.now() + (state.skew || 0);

/** Where a span ends on the time axis: its end, else now while the trace runs, else the trace's last moment. */
function endOf(span) {
  if (span.endedAt) return Date.parse(span.endedAt);
  return state.ended ? Math.max(Date.parse(span.startedAt), state.lastMoment || 0) : serverNow();
}

const durationMs = (span) => Math.max(0, endOf(span) - Date.parse(span.startedAt));
const durationText = (span) => formatMs(durationMs(span)) + (span.endedAt || state.ended ? "" : " …");

const ZERO_USAGE = { input: 0, output: 0, cached: 0, reasoning: 0 };
const addUsage = (a, b) => (b ? { input: a.input + b.input, output: a.output + b.output, cached: a.cached + b.cached, reasoning: a.reasoning + b.reasoning } : a);
const hasUsage = (u) => Boolean(u && (u.input || u.output || u.cached || u.reasoning));
const usageText = (u) => "in " + int(u.input) + " · out " + int(u.output) + " · cached " + int(u.cached) + " · reasoning " + int(u.reasoning);

// Costs (Money.amount) are decimal strings of at most 10 places: summed exactly, as integers of 1e-10 USD.
const COST_UNIT = 10n ** 10n;
const costUnits = (amount) => {
  const [whole, fraction = ""] = String(amount).split(".");
  return BigInt(whole) * COST_UNIT + BigInt((fraction + "0000000000").slice(0, 10));
};
const ZERO_COST = { units: 0n, unpriced: false };
/** A span's own cost: a model call's price, or that it had none. */
const ownCost = (span) => ({ units: span.cost ? costUnits(span.cost.amount) : 0n, unpriced: Boolean(span.costUnpriced) });
const addCost = (a, b) => ({ units: a.units + b.units, unpriced: a.unpriced || b.unpriced });
const hasCost = (c) => Boolean(c && (c.units > 0n || c.unpriced));
const costText = (c) => {
  const fraction = (c.units % COST_UNIT).toString().padStart(10, "0").replace(/0+$/, "");
  const amount = "$" + (c.units / COST_UNIT).toString() + (fraction ? "." + fraction : "");
  if (!c.unpriced) return amount;
  return c.units > 0n ? amount + " + unpriced" : "unpriced";
};

/** The words an event kind reads as in the tree. */
const EVENT_LABEL = {
  APPROVAL_REQUESTED: "approval requested", APPROVAL_DECIDED: "approval decided", BUDGET: "budget", CONTEXT: "context", COMPACTION: "compaction", ERROR: "error", FINAL_REPLY: "answer",
  INTERRUPTION: "interrupted", REPAIR: "repair", SPILL: "spill", STEERED: "steered", STOP_REQUESTED: "stop requested", THINKING: "thinking", TOOL_INPUT: "input", TOOL_OUTPUT: "output",
  TRUNCATED: "truncated",
};

/** An event's words: an APPROVAL_DECIDED of an EDIT reads as the edit it was (the call ran with other arguments). */
const eventLabel = (event) =>
  event.kind === "APPROVAL_DECIDED" && String(event.preview || "").includes('"decision":"EDIT"') ? "arguments edited" : EVENT_LABEL[event.kind] || event.kind.toLowerCase();

/** Events that prepare what a span's children do: on the same millisecond as a child, they come first. */
const BEFORE_CHILDREN = ["BUDGET", "CONTEXT", "REPAIR", "COMPACTION", "STEERED"];

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A budget breakdown (a BUDGET event, a model call's "budget" attribute) as its three figures, or null. */
function budgetOf(value) {
  const budget = typeof value === "string" ? parseJson(value) : value;
  if (!budget || typeof budget.estimate !== "number" || typeof budget.trigger !== "number" || typeof budget.effectiveWindow !== "number") return null;
  return budget;
}

/**
 * The budget as a compact gauge: the request's estimate filled in against the usable window, with
 * the compaction trigger marked. Over the trigger it turns amber, over the window red. Compact:
 * large figures in thousands (the tree's rows); the title always has them exact.
 */
function budgetGauge(budget, compact) {
  const figure = compact ? short : int;
  const gauge = el("span", "gauge");
  gauge.dataset.testid = "budget";
  gauge.dataset.used = String(budget.estimate);
  gauge.dataset.trigger = String(budget.trigger);
  gauge.dataset.window = String(budget.effectiveWindow);
  const usable = Math.max(1, budget.effectiveWindow);
  const meter = el("span", "meter" + (budget.overBudget ? " over" : budget.overTrigger ? " warn" : ""));
  const fill = el("i", "fill");
  fill.style.width = Math.min(100, (100 * budget.estimate) / usable) + "%";
  const mark = el("i", "mark");
  mark.style.left = Math.min(100, (100 * budget.trigger) / usable) + "%";
  meter.append(fill, mark);
  const text = el("span", "gauge-text");
  text.append(el("b", "used", figure(budget.estimate)), " used · trigger ", el("b", "trigger", figure(budget.trigger)), " · window ",
    el("b", "window", figure(budget.effectiveWindow)));
  gauge.title = "Tokens the request needs (" + int(budget.estimate) + ") against the usable context window (" + int(budget.effectiveWindow) +
    " of " + int(budget.contextWindow) + ", after " + int(budget.reservedOutput) + " reserved for output and a safety buffer of " +
    int(budget.safetyBuffer) + "). Over the trigger (" + int(budget.trigger) + ") the history is compacted.";
  gauge.append(meter, text);
  return gauge;
}

/** One line of an event's preview, for a row of the tree. */
const oneLine = (text) => String(text).replace(/\s+/g, " ").trim();
`;
