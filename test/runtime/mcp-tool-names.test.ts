// MCP tool names as the model sees them, and how agent profiles' allow-lists select them.
import { describe, expect, it } from "vitest";
import { allowedBy } from "../../src/domain/capabilities/agent-profile-versions.js";
import { nameMcpTools } from "../../src/runtime/ports/mcp-tool-names.js";

const tool = (name: string) => ({ name, inputSchema: { type: "object" } });

describe("MCP tool names", () => {
  it("namespaces per server and resolves collisions the same way whatever the list order", () => {
    const tools = [tool("get.page"), tool("get_page"), tool("get page"), tool("search")];
    const names = nameMcpTools("web", tools).map((t) => [t.name, t.exposedName]);
    expect(names).toEqual([
      ["get page", "mcp__web__get_page"],
      ["get.page", "mcp__web__get_page_2"],
      ["get_page", "mcp__web__get_page_3"],
      ["search", "mcp__web__search"],
    ]);
    expect(nameMcpTools("web", [...tools].reverse()).map((t) => [t.name, t.exposedName])).toEqual(names);
  });

  it("keeps names within the 64 characters model APIs accept, still unique", () => {
    const long = "x".repeat(80);
    const named = nameMcpTools("srv", [tool(`${long}a`), tool(`${long}b`)]).map((t) => t.exposedName);
    expect(named.every((name) => name.length <= 64 && /^[A-Za-z0-9_-]+$/.test(name))).toBe(true);
    expect(new Set(named).size).toBe(2);
  });

  it("lets agent profiles allow a whole server with mcp__<server>__*", () => {
    const allow = ["task_list", "mcp__github__*"];
    expect(allowedBy(allow, "mcp__github__search")).toBe(true);
    expect(allowedBy(allow, "mcp__gitlab__search")).toBe(false);
    expect(allowedBy(allow, "task_list")).toBe(true);
    expect(allowedBy(allow, "load_skill")).toBe(false);
    expect(allowedBy(undefined, "anything")).toBe(true);
  });
});
