import type { Actor } from "../domain/principal/principal-service.js";
import type { Services } from "../services.js";
import type { EventBus } from "../events/topics.js";
import type { PrismaClient } from "../generated/prisma/client.js";
import type { McpRegistry } from "../runtime/mcp/mcp-registry.js";
import type { SkillCatalog } from "../runtime/skills/skill-catalog.js";

/** What every resolver receives: the request's principal and the application's services. */
export type GraphQLContext = {
  actor: Actor;
  prisma: PrismaClient;
  events: EventBus;
  services: Services;
  /** What runs of this instance see: effective skills and MCP connection status. */
  capabilities: { skills: Pick<SkillCatalog, "forAgent" | "builtInSkills">; mcp: Pick<McpRegistry, "status"> };
  settings: {
    /** Live trace updates that may wait for one slow subscriber before it must resync. */
    traceSubscriberBuffer: number;
  };
};
