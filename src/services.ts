// The domain services of one Dossier instance, wired over its database and event bus.
import { type AgentDefinition, AgentProfileVersions } from "./domain/capabilities/agent-profile-versions.js";
import { McpServerService } from "./domain/capabilities/mcp-server-service.js";
import { SkillService } from "./domain/capabilities/skill-service.js";
import { AdmissionService } from "./domain/research/admission-service.js";
import { type ArtifactRetention, ArtifactService } from "./domain/research/artifact-service.js";
import { ConversationService } from "./domain/research/conversation-service.js";
import { PublicationService } from "./domain/research/publication-service.js";
import { RunService } from "./domain/research/run-service.js";
import { PrincipalService } from "./domain/principal/principal-service.js";
import { CheckpointService } from "./domain/workspace/checkpoint-service.js";
import { LinkService } from "./domain/workspace/link-service.js";
import { WorkspaceService } from "./domain/workspace/workspace-service.js";
import type { EventPublisher } from "./events/topics.js";
import type { PrismaClient } from "./generated/prisma/client.js";
import type { SecretBox } from "./domain/capabilities/secret-box.js";

export type Services = ReturnType<typeof createServices>;

export function createServices({
  prisma,
  events,
  artifactRetention,
  agents,
  mcp = {},
  now,
}: {
  prisma: PrismaClient;
  events: EventPublisher;
  /** The agent profiles runs may be admitted under, as configured (built-in ones included). */
  agents: readonly AgentDefinition[];
  /**
   * Principals' MCP servers: the programs STDIO servers may start (MCP_STDIO_COMMANDS), the hosts
   * HTTP servers may reach inside the network (MCP_HTTP_ALLOWED_HOSTS), none of either by default;
   * the box that seals header and environment values (without it none may be stored).
   */
  mcp?: { stdioCommands?: readonly string[]; httpAllowedHosts?: readonly string[]; secrets?: SecretBox };
  /** Replaces the artifact module's retention decision (tests of partial failures). */
  artifactRetention?: (artifacts: ArtifactService) => ArtifactRetention;
  /** The clock artifact expiry is decided by (tests move it); the system clock by default. */
  now?: () => Date;
}) {
  const artifacts = new ArtifactService({ prisma, now });
  const agentProfiles = new AgentProfileVersions({ prisma, definitions: agents });
  const agentNames = agentProfiles.names;
  const links = new LinkService({ prisma, events, artifacts: artifactRetention?.(artifacts) ?? artifacts });
  return {
    principals: new PrincipalService({ prisma, events }),
    workspaces: new WorkspaceService({ prisma, events }),
    links,
    conversations: new ConversationService({ prisma }),
    artifacts,
    publications: new PublicationService({ prisma, links }),
    agentProfiles,
    admissions: new AdmissionService({ prisma, events, profiles: agentProfiles }),
    runs: new RunService({ prisma, events }),
    checkpoints: new CheckpointService({ prisma, events }),
    skills: new SkillService({ prisma, agentNames }),
    mcpServers: new McpServerService({ prisma, events, stdioCommands: mcp.stdioCommands ?? [], httpAllowedHosts: mcp.httpAllowedHosts ?? [], secrets: mcp.secrets }),
  };
}
