// Changing a run's tags after admission (updateRunTags), for triage. One UPDATE statement computes
// the new tags from the row as it is when the statement gets it: two concurrent updates of one run
// queue on its row lock, and PostgreSQL evaluates the second against the first one's result
// (READ COMMITTED re-checks an updated row), so neither loses the other's tags. The limit of 20 is
// a condition of the same statement, so it holds however updates interleave.
import { z } from "zod";
import type { PrismaClient, Run } from "../../generated/prisma/client.js";
import { NotFoundError, ValidationError } from "../errors.js";
import { parseInput } from "../validation.js";
import { RUN_RETURNING } from "./admit-in-one-statement.js";
import { TAGS_MAX, tagList } from "./run-labels.js";

const tagsChange = z.object({
  add: tagList.nullish().transform((v) => v ?? []),
  remove: tagList.nullish().transform((v) => v ?? []),
});

export type TagsChange = z.input<typeof tagsChange>;

/**
 * The run's tags after the change, as SQL over the row being updated: its tags then `add`, each
 * once in the order first held, leaving out `remove` (a tag both added and removed is removed).
 */
const NEXT_TAGS = `ARRAY(SELECT u.tag FROM unnest(coalesce(run.tags, '{}'::text[]) || $3::text[]) WITH ORDINALITY AS u(tag, n)
                          WHERE NOT (u.tag = ANY($4::text[])) GROUP BY u.tag ORDER BY min(u.n))`;

/** Adds and removes tags of one of the owner's runs; the run as updated. */
export async function updateRunTags(prisma: PrismaClient, ownerId: string, runId: string, input: TagsChange): Promise<Run> {
  const { add, remove } = parseInput(tagsChange, input);
  const [run] = await prisma.$queryRawUnsafe<Run[]>(
    `UPDATE run SET tags = ${NEXT_TAGS}
      WHERE run.id = $1 AND run.owner_id = $2 AND cardinality(${NEXT_TAGS}) <= ${TAGS_MAX}
      RETURNING ${RUN_RETURNING}`,
    runId,
    ownerId,
    add,
    remove,
  );
  if (run) return run;
  // Nothing updated: say why (the row may have changed since, but either answer was true a moment ago).
  const current = await prisma.run.findFirst({ where: { id: runId, ownerId }, select: { tags: true } });
  if (!current) throw new NotFoundError("Run", runId);
  const would = new Set([...current.tags, ...add].filter((tag) => !remove.includes(tag))).size;
  throw new ValidationError([{ field: "add", message: `the run would hold ${would} tags; at most ${TAGS_MAX}` }]);
}
