// A workspace history larger than a page, written straight to the database: publishing and
// linking 50+ materials through the API would cost the tests minutes and prove nothing more.
import { createHash } from "node:crypto";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
import { decodeGlobalId, encodeGlobalId } from "../../src/graphql/global-id.js";

export const dbId = (globalId: string) => decodeGlobalId(globalId)!.id;

export type SeededPublication = { id: string; globalId: string; title: string };

/**
 * `count` publications of the workspace's owner, each linked to the workspace, with `versions`
 * versions each (content from `content(i, version)`). Every `sameInstant`-th group shares one
 * creation time, so the catalog's order must break ties by id. Returned newest first, as the
 * catalog lists them.
 */
export async function seedLinkedPublications(
  prisma: PrismaClient,
  workspaceGlobalId: string,
  {
    count,
    versions = 1,
    title = (i: number) => `Seeded report ${String(i).padStart(3, "0")}`,
    content = (i: number, version: number) => `Body of report ${i}, version ${version}.`,
    start = new Date("2026-03-01T00:00:00.000Z"),
  }: {
    count: number;
    versions?: number;
    title?: (i: number) => string;
    content?: (i: number, version: number) => string;
    start?: Date;
  },
): Promise<SeededPublication[]> {
  const workspaceId = dbId(workspaceGlobalId);
  const { ownerId } = await prisma.workspace.findUniqueOrThrow({ where: { id: workspaceId } });
  const seeded: SeededPublication[] = [];
  for (let i = 0; i < count; i += 1) {
    // Three publications share each instant: ties in created_at are the rule here, not the exception.
    const createdAt = new Date(start.getTime() + Math.floor(i / 3) * 1000);
    const publication = await prisma.publication.create({ data: { ownerId, title: title(i), latestVersion: versions, createdAt } });
    await prisma.publicationVersion.createMany({
      data: Array.from({ length: versions }, (_, v) => {
        const body = content(i, v + 1);
        return {
          publicationId: publication.id,
          version: v + 1,
          content: body,
          contentHash: createHash("sha256").update(body, "utf8").digest("hex"),
          asOf: new Date(createdAt.getTime() + v),
          createdAt: new Date(createdAt.getTime() + v),
        };
      }),
    });
    await prisma.workspaceLink.create({ data: { workspaceId, targetKind: "PUBLICATION", targetId: publication.id } });
    seeded.push({ id: publication.id, globalId: encodeGlobalId("Publication", publication.id), title: publication.title });
  }
  // The order is PostgreSQL's (its collation orders the ids), as the catalog's is.
  const order = await prisma.publication.findMany({
    where: { id: { in: seeded.map((p) => p.id) } },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    select: { id: true },
  });
  const byId = new Map(seeded.map((p) => [p.id, p]));
  return order.map(({ id }) => byId.get(id)!);
}
