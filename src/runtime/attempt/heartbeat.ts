// An attempt's heartbeat (R17, R18): extends its lease while it runs. A failure, or finding the
// run no longer held by the attempt, makes its fence lose the run, which aborts the attempt's
// model request and tool calls at once.
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { AttemptFence } from "./fence.js";

/** One beat: extends the lease by leaseMs, or tells the fence why the attempt lost its run. */
export async function beat(prisma: PrismaClient, fence: AttemptFence, leaseMs: number): Promise<void> {
  if (fence.lost) return;
  const { runId, attempt, workerId } = fence.holder;
  let verdict: Parameters<AttemptFence["lose"]>;
  try {
    const rows = await prisma.$queryRawUnsafe<{ id: string }[]>(
      `UPDATE run SET lease_expires_at = now() + make_interval(secs => $4::double precision / 1000)
        WHERE id = $1 AND attempt = $2 AND lease_owner = $3 AND status = 'RUNNING' RETURNING id`,
      runId,
      attempt,
      workerId,
      leaseMs,
    );
    if (rows.length > 0) return;
    const run = await prisma.run.findUnique({ where: { id: runId }, select: { status: true, attempt: true } });
    verdict =
      run?.status === "CANCELLED" && run.attempt === attempt
        ? ["CANCELLED", "it was cancelled"]
        : ["LEASE_LOST", `the heartbeat found the run ${run ? `${run.status} under attempt ${run.attempt}` : "gone"}`];
  } catch (error) {
    verdict = ["LEASE_LOST", `the heartbeat failed: ${error instanceof Error ? error.message : String(error)}`];
  }
  try {
    fence.lose(...verdict);
  } catch {
    // lose() throws to stop whoever writes; here the abort it caused is what counts.
  }
}
