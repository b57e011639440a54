// Eligibility of publication versions (W7, W13): a version is eligible while it is not
// revoked, its stored content still matches its hash, and every version it was built on —
// transitively — is eligible too. Decided at read time, never cached; whether the content still
// matches its hash is kept in content_intact by the database on every write of the content (the
// content_intact migration), so reading eligibility never reads a body.
import type { Prisma } from "../../generated/prisma/client.js";

type Reader = Pick<Prisma.TransactionClient, "$queryRawUnsafe">;

export type Eligibility =
  | { eligible: true }
  | {
      eligible: false;
      /** Why, in words a user or a model can act on. */
      reason: string;
      /** Why, naming neither the culprit's title nor why it was revoked: for a reader outside the culprit's reach. */
      unnamedReason: string;
      /** The version that broke eligibility: the one asked about or one of its sources. */
      culprit: { versionId: string; publicationId: string; version: number; title: string };
    };

export type Unavailable = Extract<Eligibility, { eligible: false }>;

/** Source chains are short in practice; this bounds the walk over a malformed graph. */
const MAX_DEPTH = 64;

type Problem = {
  root: string;
  id: string;
  publication_id: string;
  version: number;
  title: string;
  revoked: boolean;
  revocation_reason: string | null;
  depth: number;
};

/** Eligibility of each given version id. Ids that name no version are absent from the map. */
export async function eligibilityOf(db: Reader, versionIds: readonly string[]): Promise<Map<string, Eligibility>> {
  const ids = [...new Set(versionIds)];
  const result = new Map<string, Eligibility>();
  if (ids.length === 0) return result;
  // Only the versions that break eligibility come back, nearest to their root first.
  const problems = await db.$queryRawUnsafe<Problem[]>(
    `WITH RECURSIVE deps(root, id, depth) AS (
        SELECT v.id, v.id, 0 FROM publication_version v WHERE v.id = ANY($1::text[])
        UNION
        SELECT d.root, s.source_version_id, d.depth + 1
          FROM deps d JOIN publication_source s ON s.version_id = d.id
         WHERE d.depth < ${MAX_DEPTH}
      )
      SELECT d.root, v.id, v.publication_id, v.version, p.title, d.depth,
             v.revoked_at IS NOT NULL AS revoked, v.revocation_reason
        FROM deps d
        JOIN publication_version v ON v.id = d.id
        JOIN publication p ON p.id = v.publication_id
       WHERE v.revoked_at IS NOT NULL
          OR NOT v.content_intact
       ORDER BY d.root, d.depth, v.id`,
    ids,
  );
  const existing = await db.$queryRawUnsafe<{ id: string }[]>(`SELECT id FROM publication_version WHERE id = ANY($1::text[])`, ids);
  for (const { id } of existing) result.set(id, { eligible: true });
  for (const problem of problems) {
    if (result.get(problem.root)?.eligible === false) continue; // the nearest problem names it
    const culprit = { versionId: problem.id, publicationId: problem.publication_id, version: problem.version, title: problem.title };
    const what = problem.revoked ? `was revoked${problem.revocation_reason ? `: ${problem.revocation_reason}` : ""}` : "no longer matches its content hash";
    const subject = `"${problem.title}" version ${problem.version}`;
    const unnamed = problem.revoked ? "was revoked" : "no longer matches its content hash";
    result.set(problem.root, {
      eligible: false,
      reason: problem.depth === 0 ? `${subject} ${what}` : `it depends on ${subject}, which ${what}`,
      unnamedReason:
        problem.depth === 0 ? `a version outside this token's reach ${unnamed}` : `it rests on a version outside this token's reach, which ${unnamed}`,
      culprit,
    });
  }
  return result;
}
