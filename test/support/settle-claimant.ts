// The claimant of the tests that claim a run themselves and settle it by hand (settle-equivalence,
// settle-carried): one worker, a lease long enough that no renewal is due while a test runs.
export const SETTLE_CLAIMANT = {
  workerId: "worker-1",
  leaseMs: 60_000,
  leaseMarginMs: 1_000,
  maxRunningPerPrincipal: 100,
  liveness: async () => true,
  describeRun: (run: { id: string }) => ({ name: `run ${run.id}`, attributes: {} }),
  modelLabel: "scripted:settle",
};
