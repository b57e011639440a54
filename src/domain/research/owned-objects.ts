// Looks up the research objects a principal owns. Another principal's object and a missing
// one give the same NotFoundError, so nothing is revealed about objects one cannot see.
import type { LinkTargetKind, Prisma } from "../../generated/prisma/client.js";
import { NotFoundError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";

type Reader = Pick<Prisma.TransactionClient, "conversation" | "run" | "publication" | "artifact" | "publicationVersion">;

const entityName: Record<LinkTargetKind, string> = {
  CONVERSATION: "Conversation",
  RUN: "Run",
  PUBLICATION: "Publication",
  ARTIFACT: "Artifact",
};

/** Throws NotFoundError unless the principal owns the object. */
export async function assertOwned(db: Reader, actor: Actor, kind: LinkTargetKind, id: string): Promise<void> {
  const where = { id, ownerId: actor.principalId };
  const count = await {
    CONVERSATION: () => db.conversation.count({ where }),
    RUN: () => db.run.count({ where }),
    PUBLICATION: () => db.publication.count({ where }),
    ARTIFACT: () => db.artifact.count({ where }),
  }[kind]();
  if (count === 0) throw new NotFoundError(entityName[kind], id);
}

export type VersionRef = { publicationId: string; version: number };

/**
 * Resolves exact publication versions the principal owns, in the order given. `within`: the
 * publications the actor may reach (an access token's, material-reach.ts); a version of any other
 * is missing, as one of another principal's is.
 */
export async function findOwnedVersions(
  db: Reader,
  actor: Actor,
  refs: VersionRef[],
  within?: ReadonlySet<string>,
): Promise<{ id: string; ref: VersionRef }[]> {
  if (refs.length === 0) return [];
  const found = await db.publicationVersion.findMany({
    where: {
      OR: refs.map((ref) => ({ publicationId: ref.publicationId, version: ref.version })),
      publication: { ownerId: actor.principalId },
    },
    select: { id: true, publicationId: true, version: true },
  });
  const byKey = new Map(found.map((v) => [`${v.publicationId}@${v.version}`, v.id]));
  return refs.map((ref) => {
    const id = within && !within.has(ref.publicationId) ? undefined : byKey.get(`${ref.publicationId}@${ref.version}`);
    if (!id) throw new NotFoundError("Publication version", `${ref.publicationId}@${ref.version}`);
    return { id, ref };
  });
}
