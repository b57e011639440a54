// A lease that lets a sweep run on one instance at a time (sweep_lease): taken by one conditional
// upsert when it is free, expired, or already this holder's; renewed by each batch of the sweep;
// given back when the sweep ends. A holder that died leaves it to expire.
import type { Prisma } from "../../../generated/prisma/client.js";

type Writer = Pick<Prisma.TransactionClient, "$queryRawUnsafe" | "$executeRawUnsafe">;

/** Takes or renews the lease `name` for `holder` until now + `ms`; false while another holder's lease runs. */
export async function takeSweepLease(db: Writer, name: string, holder: string, now: Date, ms: number): Promise<boolean> {
  const rows = await db.$queryRawUnsafe<{ holder: string }[]>(
    `INSERT INTO sweep_lease (name, holder, expires_at) VALUES ($1, $2, $4)
     ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
      WHERE sweep_lease.holder = EXCLUDED.holder OR sweep_lease.expires_at <= $3
     RETURNING holder`,
    name,
    holder,
    now,
    new Date(now.getTime() + ms),
  );
  return rows.length === 1;
}

/** Gives the lease back (when `holder` still holds it). */
export async function releaseSweepLease(db: Writer, name: string, holder: string): Promise<void> {
  await db.$executeRawUnsafe(`DELETE FROM sweep_lease WHERE name = $1 AND holder = $2`, name, holder);
}
