// Attack: a principal's http_fetch calls look up many names whose name server never answers
// (random labels under a zone whose server drops queries). Every other principal's lookups — a
// fetch of a host the operator named, a fetch of a name that answers — must go on meanwhile, and
// the hostile calls end with the usual failure of a name that does not resolve.
import { describe, expect, it } from "vitest";
import { createSlots, NAMES_IN_FLIGHT_PER_PRINCIPAL } from "../../src/outbound/name-lookup.js";
import { inNetworkNamespace, namespacesAllowed } from "../support/network-namespace.js";

type Timed = { ms: number | null; result?: string };
type Probe = { hangingNamesAsked: number; fileRead: Timed; namedHost: Timed; answeredName: Timed; hostileOutcome: string | null };

const HANGING_CALLS = 40;
/** How long the other principal's work is waited for at most; the bound it must keep is well within it. */
const CAP_MS = 6_000;
/** Far longer than a loaded machine takes to fetch from loopback, far shorter than a lookup nobody answers. */
const BOUND_MS = 3_000;

describe.skipIf(!(await namespacesAllowed()))("one principal's unanswered names", () => {
  it("do not hold back another principal's fetches, and fail as an unresolvable name does", async () => {
    // test/support/dns-hang-process.ts answers names under ok.test and no other.
    const probe = await inNetworkNamespace<Probe>("test/support/dns-hang-process.ts", [String(HANGING_CALLS), String(CAP_MS)]);

    expect(probe.fileRead.ms).not.toBeNull();
    expect(probe.namedHost).toMatchObject({ result: "HTTP 200 OK" });
    expect(probe.namedHost.ms).toBeLessThan(BOUND_MS);
    // The name answered: the lookup is done, and the connection to its public address has no route here.
    expect(probe.answeredName).toMatchObject({ result: "fetching http://page.ok.test/ failed: the connection failed (ENETUNREACH)" });
    expect(probe.answeredName.ms).toBeLessThan(BOUND_MS);
    // The hostile principal had no more of its names asked at once than its bound.
    expect(probe.hangingNamesAsked).toBeGreaterThan(0);
    expect(probe.hangingNamesAsked).toBeLessThanOrEqual(NAMES_IN_FLIGHT_PER_PRINCIPAL);
    expect(probe.hostileOutcome).toMatch(/^fetching http:\/\/r0-\d+\.hang\.test\/ failed: the connection failed \(EAI_AGAIN\)$/);
  }, 90_000);
});

describe("lookups in flight", () => {
  it("are bounded per principal and in all, and a principal at its bound does not hold another back", async () => {
    const slots = createSlots(3, 2);
    const releases: (() => void)[] = [];
    const started: string[] = [];
    const lookup = (principal: string, name: string) =>
      slots.run(principal, async () => {
        started.push(name);
        await new Promise<void>((resolve) => releases.push(resolve));
      });
    const calls = [lookup("hostile", "h1"), lookup("hostile", "h2"), lookup("hostile", "h3"), lookup("other", "o1"), lookup("third", "t1")];
    await Promise.resolve();
    expect(started).toEqual(["h1", "h2", "o1"]);
    expect(slots.counts).toEqual({ running: 3, waiting: 2 });
    releases[2]!(); // o1 ends: t1 may start, h3 may not (hostile is at its bound)
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(["h1", "h2", "o1", "t1"]);
    releases[0]!(); // h1 ends: h3 starts
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(["h1", "h2", "o1", "t1", "h3"]);
    for (const release of releases) release();
    await Promise.all(calls);
    expect(slots.counts).toEqual({ running: 0, waiting: 0 });
  });
});
