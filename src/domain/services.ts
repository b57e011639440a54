// The domain services of one Dossier process, as the layers above the domain are given them: the
// GraphQL resolvers (graphql/context.ts) and the agent runtime. The composition root builds them
// (compose/core.ts, createServices); this type lives in the domain, so that no layer imports a
// composition root to name what it is given.
import type { AgentProfileVersions } from "./capabilities/agent-profile-versions.js";
import type { McpServerService } from "./capabilities/mcp-server-service.js";
import type { SkillService } from "./capabilities/skill-service.js";
import type { AccessTokens } from "./principal/access-tokens.js";
import type { PrincipalService } from "./principal/principal-service.js";
import type { AdmissionService } from "./runs/admission-service.js";
import type { ArtifactService } from "./research/artifact-service.js";
import type { ConversationService } from "./research/conversation-service.js";
import type { MaterialLedger } from "./research/material-ledger.js";
import type { PublicationService } from "./research/publication-service.js";
import type { ScoreService } from "./research/score-service.js";
import type { RunService } from "./runs/run-service.js";
import type { SteeringService } from "./runs/steering.js";
import type { PauseService } from "./runs/pause-service.js";
import type { ToolApprovalService } from "./runs/tool-approval-service.js";
import type { CheckpointProposals } from "./workspace/checkpoint-proposals.js";
import type { CheckpointService } from "./workspace/checkpoint-service.js";
import type { HistoryService } from "./workspace/history-service.js";
import type { LinkService } from "./workspace/link-service.js";
import type { WorkspaceService } from "./workspace/workspace-service.js";
import type { WebhookService } from "./webhooks/webhook-service.js";
import type { TraceRetention } from "./trace/retention/retention-service.js";

export type Services = {
  principals: PrincipalService;
  /** Access tokens for browsers (createAccessToken). */
  accessTokens: AccessTokens;
  workspaces: WorkspaceService;
  links: LinkService;
  conversations: ConversationService;
  artifacts: ArtifactService;
  publications: PublicationService;
  agentProfiles: AgentProfileVersions;
  admissions: AdmissionService;
  runs: RunService;
  /** pauseRun and resumeRun. */
  pauses: PauseService;
  checkpoints: CheckpointService;
  skills: SkillService;
  mcpServers: McpServerService;
  /** A workspace's history catalog and its full-text search (W6). */
  history: HistoryService;
  /** The consumption ledger of runs' materials (W8). */
  ledger: MaterialLedger;
  /** Runs' checkpoint proposals, recorded and decided in the runs' own transactions (W11). */
  proposals: CheckpointProposals;
  /** Human approval of runs' tool calls: requests recorded by attempts, decided by owners or expiry. */
  toolApprovals: ToolApprovalService;
  /** Principals' webhook endpoints and their signing secrets (issue 22). */
  webhooks: WebhookService;
  /** Score configs and scores of runs, publication versions, spans and checkpoint versions (issue 39). */
  scores: ScoreService;
  /** A person's input to runs in flight (steerRun), delivered by their attempts. */
  steering: SteeringService;
  /** Trace retention: policies, pins, what a trace's readers are told, and the expiry sweep. */
  retention: TraceRetention;
};
