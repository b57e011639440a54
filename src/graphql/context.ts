import type { WorkspaceService } from "../domain/workspace/workspace-service.js";
import type { EventBus } from "../events/topics.js";
import type { PrismaClient } from "../generated/prisma/client.js";

/** What every resolver receives. Built once per request from the application's services. */
export type GraphQLContext = {
  prisma: PrismaClient;
  events: EventBus;
  services: { workspaces: WorkspaceService };
};
