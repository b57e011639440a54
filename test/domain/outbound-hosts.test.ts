// Host names are normalised (case, the trailing dot of a fully qualified name) before the
// outbound rules compare them: `LOCALHOST.` is localhost, `Hooks.Internal.Example.` is the host
// the operator named, for allow-lists and for the check that an address leads inside.
import { describe, expect, it } from "vitest";
import { hostAllowed, hostOf, namedExactly } from "../../src/domain/capabilities/outbound-policy.js";

describe("outbound host rules", () => {
  it("compare host names without case or a trailing dot", () => {
    expect(hostOf(new URL("http://LocalHost.:3000/"))).toBe("localhost");
    expect(hostOf(new URL("http://[::1]:8080/"))).toBe("::1");
    expect(namedExactly("Hooks.Internal.Example.", "443", ["hooks.internal.example"])).toBe(true);
    expect(namedExactly("hooks.internal.example", "443", ["hooks.internal.example."])).toBe(true);
    expect(namedExactly("hooks.internal.example.evil", "443", ["hooks.internal.example"])).toBe(false);
    expect(hostAllowed(new URL("https://API.Example.com./x"), ["api.example.com"])).toBe(true);
    expect(hostAllowed(new URL("https://a.b.example.org./x"), ["*.example.org"])).toBe(true);
    expect(hostAllowed(new URL("https://example.org./x"), ["*.example.org"])).toBe(false);
  });
});
