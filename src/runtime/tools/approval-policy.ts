// Which tool calls wait for a person's decision before they execute. Three sources may ask for
// it: the operator's TOOL_APPROVALS, the run's agent profile (its `toolApprovals`, frozen with the
// profile version) and the MCP server a tool belongs to (`requireApproval`). A call waits when any
// of them says so: each is a line of defence its author drew, and none may lift another's.
//
// Within one map of patterns, the most specific match decides: an exact name beats any pattern,
// and among patterns the one with more literal characters wins (`mcp__github__write*` over
// `mcp__*`); on a tie "always" wins, the safe reading of an ambiguous map.
//
// An MCP tool has two names: the one the model sees, fitted to model APIs (characters replaced,
// cut at 64, `_2` when two collide), and its full name `mcp__<server>__<tool>` as the server lists
// it. The rules are matched against both, and a call waits if either says so: a rule such as
// `*delete*` must not miss a tool whose exposed name was cut before the word.
//
// An "always" pattern matches names in any case (`mcp__*__write*` holds an MCP server's
// `WriteFile`); a "never" pattern only the case it is written in: a rule may hold more calls than
// its author spelled out, never release more.
//
// No model output may decide an approval: an MCP tool that decides tool calls (Dossier's own MCP
// server's `decide_tool_call`, attached to a run with a key that may DECIDE) is held for a person
// whatever the rules say (decidesToolCalls; mcp-tools.ts asks it as the tool's own demand).
// Otherwise a run could call it in the same reply as a call of its own that is held, naming that
// call's id, and approve it.
//
// Nor may a run shed its agent profile's rules by admitting another run: a tool that admits runs
// (Dossier's own MCP server's `admit_run`, attached to a run) admits under the key's default
// profile, which neither holds what the run's profile holds nor limits its tools. A run whose
// profile holds calls or limits its tools has its calls of such a tool held for a person (admitsRuns).

export type ApprovalRule = "always" | "never";

/** Tool-name pattern (`*` matches any run of characters) → whether its calls wait for approval. */
export type ApprovalRules = Readonly<Record<string, ApprovalRule>>;

export type ApprovalSources = {
  /** The operator's rules (TOOL_APPROVALS). */
  operator?: ApprovalRules;
  /** The run's agent profile's rules. */
  profile?: ApprovalRules;
  /** The tool's own demand: an MCP server whose owner requires approval of every call. */
  toolRequires?: boolean;
};

const literalLength = (pattern: string) => pattern.replaceAll("*", "").length;

// Patterns come from principals' own agent profiles and names from their own MCP servers: the match
// walks the name once per star at most (no regular expression, whose backtracking on a pattern of
// many stars against a long name would hold the worker's event loop for every principal).
function matches(pattern: string, name: string, anyCase: boolean): boolean {
  const p = anyCase ? pattern.toLowerCase() : pattern;
  const s = anyCase ? name.toLowerCase() : name;
  if (!p.includes("*")) return p === s;
  let pi = 0;
  let si = 0;
  // The last star seen, and where in the name its run of characters ends so far.
  let star = -1;
  let starEnd = 0;
  while (si < s.length) {
    if (pi < p.length && p[pi] === "*") {
      star = pi++;
      starEnd = si;
    } else if (pi < p.length && p[pi] === s[si]) {
      pi += 1;
      si += 1;
    } else if (star >= 0) {
      // The characters after the star did not fit here: the star takes one more character.
      pi = star + 1;
      starEnd += 1;
      si = starEnd;
    } else return false;
  }
  while (p[pi] === "*") pi += 1;
  return pi === p.length;
}

/** Orders matching patterns from most to least specific. */
function moreSpecific(a: [string, ApprovalRule], b: [string, ApprovalRule]): number {
  const exact = Number(!b[0].includes("*")) - Number(!a[0].includes("*"));
  if (exact !== 0) return exact;
  const literal = literalLength(b[0]) - literalLength(a[0]);
  if (literal !== 0) return literal;
  return a[1] === b[1] ? 0 : a[1] === "always" ? -1 : 1;
}

/** The rule of the most specific pattern matching `name`; undefined when none matches. */
export function ruleFor(rules: ApprovalRules | undefined, name: string): ApprovalRule | undefined {
  if (!rules) return undefined;
  const matching = Object.entries(rules).filter(([pattern, rule]) => matches(pattern, name, rule === "always"));
  return matching.sort(moreSpecific)[0]?.[1];
}

/** Whether a call of the tool `name` (whose full name is `fullName`, when it has another) waits for a person's decision. */
export function needsApproval(sources: ApprovalSources, name: string, fullName?: string): boolean {
  if (sources.toolRequires === true) return true;
  const names = fullName === undefined || fullName === name ? [name] : [name, fullName];
  return names.some((each) => ruleFor(sources.operator, each) === "always" || ruleFor(sources.profile, each) === "always");
}

/**
 * Whether an MCP tool named `name` (as its server lists it) decides tool calls: Dossier's own
 * `decide_tool_call`, in any case and with any separators or affixes (`DecideToolCall`,
 * `dossier-decide-tool-call`), as a proxy in front of Dossier's MCP server might rename it.
 */
export function decidesToolCalls(name: string): boolean {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "")
    .includes("decidetoolcall");
}

/** Whether a tool named `name` admits runs: Dossier's own `admit_run`, however a proxy renames it (as decidesToolCalls). */
export function admitsRuns(name: string): boolean {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "")
    .includes("admitrun");
}

/** Whether a profile holds any call for a person or limits its tools: a run admitted without it could do more. */
export function bindsItsRuns(profile: { toolApprovals?: ApprovalRules; tools?: readonly string[] } | undefined): boolean {
  return profile !== undefined && (profile.tools !== undefined || Object.values(profile.toolApprovals ?? {}).includes("always"));
}
