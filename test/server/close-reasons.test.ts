// A socket refused at connection_init is told a GraphQL error's own message, cut to a close
// reason's 123 bytes on a character boundary, and nothing of any other failure.
import { GraphQLError } from "graphql";
import { describe, expect, it } from "vitest";
import { closeReason, refusalClose } from "../../src/server/close-reasons.js";

describe("a refused socket's close reason", () => {
  it("is a GraphQL error's own message, with 4401", () => {
    expect(refusalClose(new GraphQLError("Invalid API key."))).toEqual({ code: 4401, reason: "Invalid API key." });
  });

  it("says nothing of any other failure: 4500 and a generic text", () => {
    const internal = new Error("Invalid `prisma.apiKey.findUnique()` invocation: Argument `id`: Invalid value provided. Expected String, provided Int.");
    expect(refusalClose(internal)).toEqual({ code: 4500, reason: "Internal server error" });
    expect(refusalClose("a thrown string")).toEqual({ code: 4500, reason: "Internal server error" });
  });

  it("is cut to 123 bytes of UTF-8, never inside a character", () => {
    expect(closeReason("a".repeat(123))).toBe("a".repeat(123));
    expect(closeReason("a".repeat(200))).toBe("a".repeat(123));
    // "é" is 2 bytes and "€" 3: the cut falls inside the 62nd "é" and the 41st "€".
    expect(closeReason("é".repeat(100))).toBe("é".repeat(61));
    expect(closeReason(`a${"€".repeat(60)}`)).toBe(`a${"€".repeat(40)}`);
    const long = refusalClose(new GraphQLError(`Refused: ${"😀".repeat(80)}`)).reason;
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(123);
    expect(long).toBe(`Refused: ${"😀".repeat(28)}`);
  });
});
