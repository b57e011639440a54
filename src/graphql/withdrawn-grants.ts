// An access token's subscription lives as long as its grant. A run (or conversation) a token
// reaches only through a workspace's link — not granted itself, nor in a granted workspace or
// conversation — stops being reachable when the link goes: unlinkFromWorkspace, or the workspace
// deleted with its links. node(id) then answers null, and an open stream of it ends too: the
// subscription listens to the workspaces its grant rests on, and on UNLINKED or DELETED asks again
// whether subscribing now would be allowed (one statement, the check subscribing made). Until that
// answer comes, nothing more is handed on; when it is no, the stream ends with GRANT_WITHDRAWN. A
// subscription whose grant names what it watches rests on no link and is not watched (archiving
// a workspace keeps its links, and what they reach, as node(id) does).
import { GraphQLError } from "graphql";
import { type AccessOperation, type AccessScope, grants } from "../domain/principal/access-scope.js";
import { decodeGlobalId } from "../domain/global-id.js";
import { keepListening, type Listening } from "../events/keep-listening.js";
import type { GraphQLContext } from "./context.js";
import { endingWhen } from "./ending-stream.js";

export const GRANT_WITHDRAWN = "This access token no longer reaches what it subscribed to: the workspace link that granted it was removed.";

/** The workspaces whose links the grant of `operation` on these ids rests on: none when the grants name them. */
export async function linksRestedOn(scope: AccessScope, operation: AccessOperation, targets: readonly unknown[], ctx: GraphQLContext): Promise<string[]> {
  const through = scope.grants.filter((g) => g.kind === "Workspace" && g.operations.includes(operation)).map((g) => g.id);
  for (const target of targets) {
    const decoded = typeof target === "string" ? decodeGlobalId(target) : null;
    if (!decoded || decoded.typename === "Workspace") continue;
    if (decoded.typename === "Conversation" && grants(scope, operation, "Conversation", decoded.id)) continue;
    if (decoded.typename === "Run") {
      if (grants(scope, operation, "Run", decoded.id)) continue;
      const run = await ctx.prisma.run.findFirst({
        where: { id: decoded.id, ownerId: ctx.actor.principalId },
        select: { workspaceId: true, conversationId: true },
      });
      if (run && grants(scope, operation, "Run", decoded.id, run)) continue;
    }
    return through;
  }
  return [];
}

/**
 * The events of a subscription while `stillAllowed` holds, asked again whenever one of the
 * workspaces changes its links (and after the bus may have missed such a change); then the error
 * that says the grant was withdrawn; the events as they are when the grant rests on no link. An
 * event that comes while the grant is being asked about waits for the answer (ending-stream.ts).
 */
export function whileGranted<T>(
  events: AsyncIterable<T>,
  watch: { workspaceIds: readonly string[]; stillAllowed: () => Promise<boolean>; ctx: GraphQLContext },
): AsyncIterable<T> {
  if (watch.workspaceIds.length === 0) return events;
  let ended: GraphQLError | undefined;
  let withdraw: (error: GraphQLError) => void = () => undefined;
  const ending = new Promise<Error>((resolve) => {
    withdraw = (error) => {
      ended = error;
      resolve(error);
    };
  });
  let checking: Promise<void> = Promise.resolve();
  const recheck = () => {
    checking = checking.then(async () => {
      if (ended) return;
      try {
        if (!(await watch.stillAllowed())) withdraw(new GraphQLError(GRANT_WITHDRAWN, { extensions: { code: "GRANT_WITHDRAWN" } }));
      } catch (error) {
        // A grant that cannot be confirmed is not kept: subscribing again checks it afresh.
        watch.ctx.logger.warn("checking an access token's grant failed", { error: String(error) });
        withdraw(
          new GraphQLError("Whether this access token still reaches what it subscribed to could not be checked: subscribe again.", {
            extensions: { code: "UNAVAILABLE" },
          }),
        );
      }
    });
  };
  const listenings: Listening[] = watch.workspaceIds.map((workspaceId) =>
    keepListening({
      what: "the links of a token's workspace",
      subscribe: () => watch.ctx.events.subscribe("workspace:event", workspaceId),
      onEvent: (event) => {
        if (event.kind === "UNLINKED" || event.kind === "DELETED") recheck();
      },
      onResumed: recheck,
      logger: watch.ctx.logger,
    }),
  );
  // An unlink committed after subscribing checked the grant, before these listened, is found now.
  recheck();
  return endingWhen(events, {
    ending,
    endedNow: () => ended,
    settled: () => checking,
    stop: () => Promise.all(listenings.map((listening) => listening.stop())),
  });
}
