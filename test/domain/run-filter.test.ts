// The filter's rules in memory (what the live list matches a changed run with) and its
// validation; the same filters against the database are in test/graphql/run-filter-semantics.test.ts.
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../src/domain/errors.js";
import { parseRunFilter, runMatchesFilter } from "../../src/domain/runs/run-filter.js";
import { metadataObject, tagList } from "../../src/domain/runs/run-labels.js";

const run = {
  workspaceId: "w1",
  conversationId: "c1",
  scheduleId: "s1",
  status: "RUNNING" as const,
  tags: ["urgent", "billing"],
  metadata: { ticket: "T-1", team: "blue" },
  agent: "researcher",
  createdAt: new Date("2026-01-02T00:00:00Z"),
  cost: "0.0475000000",
};

describe("runMatchesFilter", () => {
  it.each([
    [{}, true],
    [{ workspaceId: "w1" }, true],
    [{ workspaceId: "w2" }, false],
    [{ conversationId: "c2" }, false],
    [{ status: ["QUEUED", "RUNNING"] }, true],
    [{ status: ["QUEUED"] }, false],
    [{ status: [] }, true],
    [{ tagsAll: ["urgent", "billing"] }, true],
    [{ tagsAll: ["urgent", "other"] }, false],
    [{ tagsAny: ["other", "billing"] }, true],
    [{ tagsAny: ["other"] }, false],
    [{ metadata: { ticket: "T-1" } }, true],
    [{ metadata: { ticket: "T-1", team: "red" } }, false],
    [{ metadata: { missing: "" } }, false],
    [{ agent: "researcher" }, true],
    [{ scheduleId: "s1" }, true],
    [{ scheduleId: "s2" }, false],
    [{ agent: "writer" }, false],
    [{ createdAfter: new Date("2026-01-01T00:00:00Z"), createdBefore: new Date("2026-01-03T00:00:00Z") }, true],
    [{ createdAfter: run.createdAt }, false],
    [{ createdBefore: run.createdAt }, false],
    [{ costAbove: "0.0474" }, true],
    [{ costAbove: "0.0475" }, false],
    [{ costAbove: "0.05" }, false],
    [{ costAbove: "0" }, true],
    [{ workspaceId: "w1", status: ["RUNNING"], tagsAny: ["urgent"], metadata: { team: "blue" } }, true],
  ])("%j → %s", (filter, expected) => {
    expect(runMatchesFilter(run, parseRunFilter(filter))).toBe(expected);
  });
});

describe("labels", () => {
  it("keeps each tag once, trimmed, and refuses invisible, control and overlong tags", () => {
    expect(tagList.parse([" a ", "a", "b"])).toEqual(["a", "b"]);
    for (const bad of ["", "   ", "\u200b", "a\u200bb", "a\u0007", "x".repeat(65)]) expect(tagList.safeParse([bad]).success).toBe(false);
    expect(tagList.safeParse(["é".repeat(64)]).success).toBe(true);
    expect(tagList.safeParse(Array.from({ length: 21 }, (_, i) => `t${i}`)).success).toBe(false);
  });

  it("takes flat string metadata only, within 32 keys and 8 KB", () => {
    expect(metadataObject.safeParse({ a: "1" }).success).toBe(true);
    for (const bad of [[], "x", { a: 1 }, { a: { b: "c" } }, { " a": "1" }, { "": "1" }, { a: "x".repeat(8200) }]) {
      expect(metadataObject.safeParse(bad).success).toBe(false);
    }
    expect(metadataObject.safeParse(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, "v"]))).success).toBe(false);
  });

  it("names the filter field it refuses", () => {
    expect(() => parseRunFilter({ tagsAll: [""] })).toThrow(ValidationError);
    expect(() => parseRunFilter({ metadata: { a: 1 } })).toThrow(/filter\.metadata\.a/);
    for (const bad of ["-1", "1e3", "abc", "0.12345678901", "12345678901"]) expect(() => parseRunFilter({ costAbove: bad })).toThrow(/filter\.costAbove/);
  });
});
