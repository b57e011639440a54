// The spill store over the database: spill rows hold handles, previews and item indexes; the
// bytes are the TOOL message's content in the log, sliced in SQL so a read moves only what it
// returns. (An adapter for a file system or object store would keep the same port.)
import type { Prisma, PrismaClient } from "../../generated/prisma/client.js";
import type { Tx } from "../../domain/transaction.js";
import type { SpillInfo, SpillStore, SpillStrategy } from "../ports/spill-store.js";
import { trimSeparator, utf16Offsets } from "../spill/json-list-index.js";
import { TERMINAL_STATUSES } from "../../domain/runs/stop-reasons.js";

/** What rendering a spilled result for the model needs (the log read path selects it too). */
export const spillPreviewSelect = {
  handle: true,
  toolName: true,
  sizeBytes: true,
  sizeChars: true,
  preview: true,
  strategy: true,
  previewItems: true,
  listPath: true,
  itemCount: true,
  releasedAt: true,
} satisfies Prisma.SpillSelect;

const infoSelect = {
  ...spillPreviewSelect,
  id: true,
  runId: true,
  conversationId: true,
  messageId: true,
  toolCallId: true,
  createdAt: true,
} satisfies Prisma.SpillSelect;

type Row = Prisma.SpillGetPayload<{ select: typeof infoSelect }>;

const toInfo = ({ listPath, itemCount, strategy, ...row }: Row): SpillInfo => ({
  ...row,
  strategy: strategy as SpillStrategy,
  list: listPath !== null && itemCount !== null && row.releasedAt === null ? { path: listPath, itemCount } : null,
});

export class PrismaSpillStore implements SpillStore {
  constructor(private readonly prisma: PrismaClient) {}

  async find(handle: string): Promise<SpillInfo | null> {
    const row = await this.prisma.spill.findUnique({ where: { handle }, select: infoSelect });
    return row ? toInfo(row) : null;
  }

  async live(runId: string): Promise<SpillInfo[]> {
    const rows = await this.prisma.spill.findMany({ where: { runId, releasedAt: null }, select: infoSelect, orderBy: { createdAt: "asc" } });
    return rows.map(toInfo);
  }

  async readBytes(spill: SpillInfo, start: number, end: number): Promise<Uint8Array> {
    if (end <= start) return new Uint8Array();
    const [row] = await this.prisma.$queryRawUnsafe<{ chunk: Uint8Array }[]>(
      `SELECT substring(convert_to(content, 'UTF8') from $2::int for $3::int) AS chunk FROM message WHERE id = $1`,
      spill.messageId,
      start + 1,
      end - start,
    );
    if (!row) throw new Error(`the message of spill ${spill.handle} is missing`);
    return new Uint8Array(row.chunk);
  }

  async readItems(spill: SpillInfo, from: number, to: number): Promise<string[]> {
    if (to <= from) return [];
    // Postgres arrays count from 1: item k starts at item_starts[k + 1]; the slice ends where
    // the next item starts, or at the list's closing bracket.
    const [row] = await this.prisma.$queryRawUnsafe<{ starts: number[]; text: string }[]>(
      `SELECT s.item_starts[$2::int + 1 : $3::int] AS starts,
              substr(m.content, s.item_starts[$2::int + 1] + 1,
                     COALESCE(s.item_starts[$3::int + 1], s.list_end) - s.item_starts[$2::int + 1]) AS text
         FROM spill s JOIN message m ON m.id = s.message_id
        WHERE s.id = $1 AND s.released_at IS NULL`,
      spill.id,
      from,
      to,
    );
    if (!row || row.starts.length !== to - from) throw new Error(`spill ${spill.handle} has no index for items ${from}–${to - 1}`);
    const base = row.starts[0]!;
    const bounds = utf16Offsets(row.text, [...row.starts.map((s) => s - base), Number.MAX_SAFE_INTEGER]);
    return row.starts.map((_, k) => trimSeparator(row.text.slice(bounds[k], bounds[k + 1])));
  }

  async readWhole(spill: SpillInfo): Promise<string> {
    const message = await this.prisma.message.findUniqueOrThrow({ where: { id: spill.messageId }, select: { content: true } });
    return message.content; // as stored, like every other read of this store
  }

  /** Also inside a caller's transaction (`db`): a run's spills are released as it settles. */
  async releaseRun(runId: string, db: Pick<Tx, "spill"> = this.prisma, at = new Date()): Promise<number> {
    const { count } = await db.spill.updateMany({
      where: { runId, releasedAt: null },
      data: { releasedAt: at, itemStarts: [] },
    });
    return count;
  }

  async sweep(): Promise<number> {
    const { count } = await this.prisma.spill.updateMany({
      where: { releasedAt: null, run: { status: { in: [...TERMINAL_STATUSES] } } },
      data: { releasedAt: new Date(), itemStarts: [] },
    });
    return count;
  }
}
