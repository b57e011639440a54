// A person's judgement of an exact publication version is part of the research record (issue
// 39): the next run is shown the HUMAN scores of the versions its history catalog lists and of
// the version read_material returns. Compactly — config name, value or label, by whom — and
// bounded: the newest HUMAN_SCORES_SHOWN per version in one statement for the whole page,
// however many scores a version has, with how many there are in all.
import { Prisma, type PrismaClient } from "../../generated/prisma/client.js";

/** The newest human scores shown per version; the rest are counted. */
export const HUMAN_SCORES_SHOWN = 3;

export type HumanScore = { configName: string; value: number | null; label: string | null; by: string; at: Date };
export type HumanScores = { shown: HumanScore[]; total: number };

type Row = { target_id: string; name: string; value: number | null; label: string | null; by_name: string; created_at: Date; total: bigint | number };

/** The HUMAN scores of these publication versions of `ownerId`'s, newest first, at most HUMAN_SCORES_SHOWN each. */
export async function humanScoresOf(prisma: PrismaClient, ownerId: string, versionIds: readonly string[]): Promise<Map<string, HumanScores>> {
  const byVersion = new Map<string, HumanScores>();
  if (versionIds.length === 0) return byVersion;
  const rows = await prisma.$queryRaw<Row[]>`
    SELECT target_id, name, value, label, by_name, created_at, total FROM (
      SELECT s.target_id, c.name, s.value, s.label, p.name AS by_name, s.created_at,
             ROW_NUMBER() OVER (PARTITION BY s.target_id ORDER BY s.created_at DESC, s.id DESC) AS n,
             COUNT(*) OVER (PARTITION BY s.target_id) AS total
        FROM score s JOIN score_config c ON c.id = s.config_id JOIN principal p ON p.id = s.created_by_id
       WHERE s.target_kind = 'PUBLICATION_VERSION' AND s.source = 'HUMAN' AND s.owner_id = ${ownerId}
         AND s.target_id IN (${Prisma.join([...versionIds])})
    ) ranked
     WHERE n <= ${HUMAN_SCORES_SHOWN}
     ORDER BY created_at DESC`;
  for (const row of rows) {
    const entry = byVersion.get(row.target_id) ?? { shown: [], total: Number(row.total) };
    entry.shown.push({ configName: row.name, value: row.value, label: row.label, by: row.by_name, at: new Date(row.created_at) });
    byVersion.set(row.target_id, entry);
  }
  return byVersion;
}

/** How a version's human scores read to a model: `human scores: accuracy=4, verdict=wrong (by Ada)` and what was left out. */
export function humanScoresText(scores: HumanScores | undefined): string | null {
  if (!scores || scores.shown.length === 0) return null;
  const shown = scores.shown.map((s) => `${s.configName}=${s.label ?? s.value} by ${JSON.stringify(s.by)}`).join(", ");
  const more = scores.total > scores.shown.length ? ` (+${scores.total - scores.shown.length} older)` : "";
  return `human scores: ${shown}${more}`;
}
