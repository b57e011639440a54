// The ids of tool calls a run's replies streamed and left out (call-ids.ts): each cut reply's model
// call (its MODEL_CALL span) records them as it ends, in the transaction that logs the reply — a
// reply that failed mid-stream, every id it streamed, as its span ends with the error — so an
// attempt that resumes the run — on another instance, after a crash — reads them back with its
// log: none of them names a later call of the run. A run's trace shares its id.
import type { PrismaClient } from "../../generated/prisma/client.js";
import { CALL_IDS_LEFT_OUT } from "../loop/call-ids.js";

/** Reads the call ids the run's model calls left out of their replies, in one statement. */
export function prismaCallIdsLeftOut(prisma: PrismaClient): (runId: string) => Promise<string[]> {
  return async (runId) => {
    const rows = await prisma.$queryRaw<{ ids: unknown }[]>`
      SELECT attributes -> ${CALL_IDS_LEFT_OUT}::text AS ids FROM "public"."span"
       WHERE trace_id = ${runId} AND kind = 'MODEL_CALL' AND attributes -> ${CALL_IDS_LEFT_OUT}::text IS NOT NULL`;
    return rows.flatMap(({ ids }) => (Array.isArray(ids) ? ids.filter((id): id is string => typeof id === "string") : []));
  };
}
