import type { Actor } from "../domain/principal/principal-service.js";
import type { Services } from "../domain/services.js";
import type { EventBus } from "../events/topics.js";
import type { PrismaClient } from "../generated/prisma/client.js";
import type { Logger } from "../logger.js";
import type { McpStatusView } from "../runtime/ports/mcp.js";
import type { SkillsView } from "../runtime/ports/skills.js";

/** What every resolver receives: the request's principal and the application's services. */
export type GraphQLContext = {
  actor: Actor;
  prisma: PrismaClient;
  events: EventBus;
  services: Services;
  /** The server's clock: access and sign-in tokens expire by it (tests move it). */
  now: () => Date;
  /** What runs of this instance see: effective skills and MCP connection status. */
  capabilities: { skills: SkillsView; mcp: McpStatusView };
  /** The operator's log: what the client is answered without its cause (a database that timed out) is told here. */
  logger: Logger;
  settings: {
    /** Live trace updates that may wait for one slow subscriber before it must resync. */
    traceSubscriberBuffer: number;
    /** Bytes of large texts one response may hold (MAX_RESPONSE_BYTES, graphql/large-text.ts). */
    maxResponseBytes?: number;
    /** Told once for each response that leaves texts out past that budget, with RESPONSE_TOO_LARGE (/metrics). */
    countRejected?: (reason: string) => void;
  };
};
