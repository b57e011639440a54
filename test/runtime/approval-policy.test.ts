// Which tool calls wait for a person: the most specific pattern of a map decides, and a call waits
// when any source (the operator, the profile, the tool itself) says so.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { approvalPolicy } from "../../src/runtime/loop/held-calls.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { needsApproval, ruleFor } from "../../src/runtime/tools/approval-policy.js";
import { projectRoot } from "../support/processes.js";

const operator = { run_command: "always", "mcp__*__write*": "always", "*": "never" } as const;

describe("the approval policy", () => {
  it("the most specific pattern decides: exact names, then more literal characters, then always on a tie", () => {
    expect(ruleFor(operator, "run_command")).toBe("always");
    expect(ruleFor(operator, "mcp__github__write_file")).toBe("always");
    expect(ruleFor(operator, "mcp__github__read_file")).toBe("never");
    expect(ruleFor(operator, "http_fetch")).toBe("never");
    expect(ruleFor({ "mcp__*": "always", "mcp__github__*": "never" }, "mcp__github__list")).toBe("never");
    expect(ruleFor({ "mcp__*": "always", mcp__github__list: "never" }, "mcp__github__list")).toBe("never");
    expect(ruleFor({ "a*": "never", "*b": "always" }, "ab")).toBe("always");
    expect(ruleFor({ "read.*": "always" }, "readXfile")).toBeUndefined();
    expect(ruleFor(undefined, "anything")).toBeUndefined();
  });

  it("an always pattern holds a name in any case; a never pattern releases only the case it is written in", () => {
    expect(ruleFor(operator, "mcp__files__WriteFile")).toBe("always");
    expect(ruleFor(operator, "RUN_COMMAND")).toBe("always");
    expect(needsApproval({ operator: { "*delete*": "always" } }, "mcp__fs__Delete_Cache")).toBe(true);
    expect(ruleFor({ "mcp__*": "always", "mcp__github__*": "never" }, "MCP__GITHUB__list")).toBe("always");
    expect(ruleFor({ "mcp__*": "always", "mcp__github__*": "never" }, "mcp__github__list")).toBe("never");
    expect(ruleFor({ Deploy: "never" }, "deploy")).toBeUndefined();
    expect(ruleFor({ deploy: "always", DEPLOY: "never" }, "DEPLOY")).toBe("always");
  });

  it("a call waits when any source says so, and no source lifts another's demand", () => {
    expect(needsApproval({ operator }, "run_command")).toBe(true);
    expect(needsApproval({ operator }, "read_material")).toBe(false);
    expect(needsApproval({ operator, profile: { read_material: "always" } }, "read_material")).toBe(true);
    expect(needsApproval({ operator, profile: { run_command: "never" } }, "run_command")).toBe(true);
    expect(needsApproval({ operator, toolRequires: true }, "mcp__notes__read")).toBe(true);
    expect(needsApproval({}, "run_command")).toBe(false);
  });

  it("a star matches any run of characters, newlines and regular-expression characters included, each other character itself", () => {
    const cases: [string, string, boolean][] = [
      ["*", "", true],
      ["a*", "a", true],
      ["*a*b*", "xaybz", true],
      ["*a*b*", "xbya", false],
      ["**x**", "x", true],
      ["a*b*c", "abcabc", true],
      ["a*b*c", "abcab", false],
      ["mcp__*__write*", "mcp__x\ny__write\n", true],
      ["(a|b)*", "(a|b)xyz", true],
      ["(a|b)*", "axyz", false],
      ["*.*", "ab", false],
      ["a?c*", "abc", false],
    ];
    for (const [pattern, name, expected] of cases)
      expect([pattern, name, ruleFor({ [pattern]: "never" }, name) === "never"]).toEqual([pattern, name, expected]);
  });

  it("a profile's pattern of many stars against an MCP tool's long name answers at once, holding no one's event loop", async () => {
    // A principal writes both: the pattern in its agent profile, the name in its MCP server's listing.
    // Run in a process of its own: a match that backtracked would block this one past any timeout.
    const script = `
      import { needsApproval } from "./src/runtime/tools/approval-policy.ts";
      const pattern = "*a".repeat(12) + "*b";
      const held = needsApproval({ profile: { [pattern]: "always" } }, "a".repeat(512));
      const matched = needsApproval({ profile: { [pattern]: "always" } }, "a".repeat(511) + "b");
      console.log(JSON.stringify({ held, matched }));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: projectRoot,
      timeout: 20_000,
    });
    expect(JSON.parse(stdout.trim())).toEqual({ held: false, matched: true });
  });

  it("an MCP tool's full name counts as well as its exposed one: a call waits when either name's rule says always", () => {
    const exposed = "mcp__acme-internal-admin-tools__repositories_bulk_archive_and_de";
    const full = "mcp__acme-internal-admin-tools__repositories_bulk_archive_and_delete_old";
    expect(needsApproval({ operator: { "*delete*": "always" } }, exposed)).toBe(false);
    expect(needsApproval({ operator: { "*delete*": "always" } }, exposed, full)).toBe(true);
    expect(needsApproval({ profile: { "*delete*": "always", "*_de": "never" } }, exposed, full)).toBe(true);
    expect(needsApproval({ operator: { "*delete*": "never" } }, exposed, full)).toBe(false);
  });

  it("a run's policy reads the tool's own demand, and holds no call of a tool the run is not offered", () => {
    const tool = (name: string, requiresApproval?: boolean): [string, Tool] => [
      name,
      {
        schema: { name, description: name, parameters: {} },
        requiresApproval: requiresApproval === undefined ? undefined : () => requiresApproval,
        execute: async () => "",
      },
    ];
    const tools = new Map([tool("mcp__notes__read", true), tool("read_material")]);
    const policy = approvalPolicy({ store: {} as never, rules: { "*": "always", read_material: "never" }, timeoutMs: 1 }, undefined, tools);
    expect(policy("mcp__notes__read")).toBe(true);
    expect(policy("read_material")).toBe(false);
    expect(policy("no_such_tool")).toBe(false);
  });

  it("TOOL_APPROVALS and TOOL_APPROVAL_TIMEOUT_SECONDS are read with the other settings, and refused when malformed", () => {
    expect(loadConfig({}).toolApprovals).toEqual({ rules: {}, timeoutSeconds: 3_600 });
    const config = loadConfig({ TOOL_APPROVALS: JSON.stringify(operator), TOOL_APPROVAL_TIMEOUT_SECONDS: "90" });
    expect(config.toolApprovals).toEqual({ rules: operator, timeoutSeconds: 90 });
    expect(() => loadConfig({ TOOL_APPROVALS: '{"run_command":"sometimes"}' })).toThrow(/TOOL_APPROVALS.*run_command.*"always" or "never"/);
    expect(() => loadConfig({ TOOL_APPROVALS: "run_command" })).toThrow(/TOOL_APPROVALS.*must be JSON/);
    expect(() => loadConfig({ TOOL_APPROVAL_TIMEOUT_SECONDS: "0" })).toThrow(/TOOL_APPROVAL_TIMEOUT_SECONDS/);
  });
});
