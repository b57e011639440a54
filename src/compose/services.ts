// The domain services of one Dossier process over its database and event publisher — workspaces,
// runs and their admission, pauses and approvals, publications, capabilities, webhooks, schedules,
// costs and trace retention — as the API and the runtime use them (domain/services.ts says what
// each is). compose/core.ts builds them for every process, whether it executes runs or not.
import { type AgentDefinition, AgentProfileVersions } from "../domain/capabilities/agent-profile-versions.js";
import { McpServerService } from "../domain/capabilities/mcp-server-service.js";
import { SkillService } from "../domain/capabilities/skill-service.js";
import { AccessTokens } from "../domain/principal/access-tokens.js";
import type { StdioCommandLine } from "../domain/capabilities/stdio-policy.js";
import { AdmissionService } from "../domain/runs/admission-service.js";
import { type ArtifactRetention, ArtifactService } from "../domain/research/artifact-service.js";
import { ConversationService } from "../domain/research/conversation-service.js";
import { MaterialLedger } from "../domain/research/material-ledger.js";
import { PublicationService } from "../domain/research/publication-service.js";
import { RunService } from "../domain/runs/run-service.js";
import { SteeringService } from "../domain/runs/steering.js";
import { PauseService } from "../domain/runs/pause-service.js";
import { ToolApprovalService } from "../domain/runs/tool-approval-service.js";
import { PrincipalService } from "../domain/principal/principal-service.js";
import { WebhookService } from "../domain/webhooks/webhook-service.js";
import type { RetentionMode } from "../domain/trace/retention/expiry.js";
import { TraceRetention } from "../domain/trace/retention/retention-service.js";
import type { SweepSettings } from "../domain/trace/retention/sweep.js";
import { expireWeeks } from "../domain/trace/retention/week-expiry.js";
import { retentionWeekRules } from "../domain/trace/retention/week-expiry-rules.js";
import type { Services } from "../domain/services.js";
import { CheckpointProposals } from "../domain/workspace/checkpoint-proposals.js";
import { CheckpointService } from "../domain/workspace/checkpoint-service.js";
import { HistoryService } from "../domain/workspace/history-service.js";
import { LinkService } from "../domain/workspace/link-service.js";
import { WorkspaceService } from "../domain/workspace/workspace-service.js";
import type { EventPublisher } from "../events/topics.js";
import type { PrismaClient } from "../generated/prisma/client.js";
import type { SecretBox } from "../domain/secret-box.js";
import type { RunAnnouncer } from "../domain/runs/run-announcer.js";
import type { Database } from "../db/open-database.js";
import { ScoreService } from "../domain/research/score-service.js";
import type { Logger } from "../logger.js";
import { pauseSchedulesOnRevocation } from "../domain/schedules/revoked-keys.js";
import { archivedSchedules } from "../domain/schedules/archived-schedules.js";
import { ScheduleFiring } from "../domain/schedules/schedule-firing.js";
import { ScheduleService } from "../domain/schedules/schedule-service.js";
import { CostService } from "../domain/costs/cost-service.js";

export function createServices({
  prisma,
  events,
  announcer,
  artifactRetention,
  agents,
  mcp = {},
  webhookAllowedHosts = [],
  now,
  scored,
  retention,
  instanceId,
  weekStorage,
  maxQueuedRunsPerPrincipal,
  maxSchedulesPerPrincipal,
  maxApiKeysPerPrincipal,
  maxArtifactBytesPerPrincipal,
  logger,
}: {
  prisma: PrismaClient;
  /** Where what fails outside a request is told (the pausing of a revoked key's schedules). */
  logger?: Logger;
  /** PostgreSQL, whose trace tables are partitioned by week: retention drops whole weeks first. */
  weekStorage?: Pick<Database, "withSession">;
  events: EventPublisher;
  /** Where admitted runs are announced to the workers. */
  announcer: RunAnnouncer;
  /** The agent profiles runs may be admitted under, as configured (built-in ones included). */
  agents: readonly AgentDefinition[];
  /**
   * Principals' MCP servers: the programs STDIO servers may start (MCP_STDIO_COMMANDS), the hosts
   * HTTP servers may reach inside the network (MCP_HTTP_ALLOWED_HOSTS), none of either by default;
   * the box that seals header and environment values (without it none may be stored).
   */
  mcp?: { stdioCommands?: readonly StdioCommandLine[]; stdioEnv?: readonly string[]; httpAllowedHosts?: readonly string[]; secrets?: SecretBox };
  /** Hosts webhooks may reach inside the network (WEBHOOK_ALLOWED_HOSTS); their secrets are sealed with mcp.secrets' box. */
  webhookAllowedHosts?: readonly string[];
  /** Replaces the artifact module's retention decision (tests of partial failures). */
  artifactRetention?: (artifacts: ArtifactService) => ArtifactRetention;
  /** The clock artifact expiry and late tool-call decisions are decided by (tests move it); the system clock by default. */
  now?: () => Date;
  /** Told of every score committed: the OTLP exporter, once this process has one. */
  scored?: { notify?: (scoreId: string) => void };
  /** Trace retention's operator default (TRACE_RETENTION_DAYS, TRACE_RETENTION_MODE): kept forever without it. */
  retention?: RetentionOptions;
  /** This process's identity towards the database (the sweep lease's holder). */
  instanceId?: string;
  /** The most runs one principal may have QUEUED (MAX_QUEUED_RUNS_PER_PRINCIPAL); 1,000 without it. */
  maxQueuedRunsPerPrincipal?: number;
  /** The most schedules one principal may have (MAX_SCHEDULES_PER_PRINCIPAL); 100 without it. */
  maxSchedulesPerPrincipal?: number;
  /** The most live API keys one principal may have (MAX_API_KEYS_PER_PRINCIPAL); 100 without it. */
  maxApiKeysPerPrincipal?: number;
  /** Bytes of artifact content one principal may store (MAX_ARTIFACT_BYTES_PER_PRINCIPAL); 1 GiB without it. */
  maxArtifactBytesPerPrincipal?: number;
}): Services {
  const artifacts = new ArtifactService({ prisma, now, maxBytesPerPrincipal: maxArtifactBytesPerPrincipal });
  const agentProfiles = new AgentProfileVersions({ prisma, definitions: agents });
  const agentNames = agentProfiles.names;
  const links = new LinkService({ prisma, events, artifacts: artifactRetention?.(artifacts) ?? artifacts });
  const admissions = new AdmissionService({ prisma, events, announcer, profiles: agentProfiles, maxQueuedRuns: maxQueuedRunsPerPrincipal });
  const firing = new ScheduleFiring({ prisma, events, admissions, now });
  return {
    principals: new PrincipalService({ prisma, events, revoked: pauseSchedulesOnRevocation({ prisma, events, logger }), maxApiKeys: maxApiKeysPerPrincipal }),
    accessTokens: new AccessTokens({ prisma, secrets: mcp.secrets, now }),
    workspaces: new WorkspaceService({ prisma, events, schedules: archivedSchedules({ now }) }),
    links,
    conversations: new ConversationService({ prisma }),
    artifacts,
    publications: new PublicationService({ prisma, links, events }),
    agentProfiles,
    admissions,
    runs: new RunService({ prisma, events, announcer }),
    pauses: new PauseService({ prisma, events, announcer, maxQueuedRuns: maxQueuedRunsPerPrincipal }),
    checkpoints: new CheckpointService({ prisma, events }),
    skills: new SkillService({ prisma, agentNames }),
    mcpServers: new McpServerService({
      prisma,
      events,
      stdioCommands: mcp.stdioCommands ?? [],
      stdioEnv: mcp.stdioEnv ?? [],
      httpAllowedHosts: mcp.httpAllowedHosts ?? [],
      secrets: mcp.secrets,
    }),
    history: new HistoryService({ prisma }),
    ledger: new MaterialLedger({ prisma }),
    proposals: new CheckpointProposals({ prisma }),
    toolApprovals: new ToolApprovalService({ prisma, events, announcer, now }),
    webhooks: new WebhookService({ prisma, secrets: mcp.secrets, allowedHosts: webhookAllowedHosts, now }),
    scores: new ScoreService({ prisma, events, scored }),
    costs: new CostService({ prisma, now }),
    steering: new SteeringService({ prisma, events }),
    schedules: new ScheduleService({ prisma, profiles: agentProfiles, firing, now, maxSchedules: maxSchedulesPerPrincipal }),
    retention: new TraceRetention({
      prisma,
      now,
      instanceId,
      operator: retention?.days ? { days: retention.days, mode: retention.mode } : undefined,
      sweep: retention?.sweep,
      expireWeeks: weekStorage ? (at, operator) => weekStorage.withSession((session) => expireWeeks(session, retentionWeekRules(operator), at)) : undefined,
    }),
  };
}

/** TRACE_RETENTION_DAYS (null: forever) and TRACE_RETENTION_MODE; `sweep` bounds its batches (tests shrink them). */
export type RetentionOptions = { days: number | null; mode: RetentionMode; sweep?: Partial<SweepSettings> };
