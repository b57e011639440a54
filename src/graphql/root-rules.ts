// What every root field needs, from an API key's scopes and from an access token's grants
// (graphql/access-grants.ts applies it). Deny by default: a root field without an entry here is
// refused to every API key and every access token, and a test walks the schema's root fields so
// that a new one cannot be left out. What a key needs, by what the field does:
//   - READ: every query (the principal's keys list only those within the calling key's scopes);
//   - SUBSCRIBE: every subscription;
//   - ADMIT: what adds to or changes research (workspaces, conversations, artifacts, publications,
//     schedules, runs' questions and tags), and READ too for admitting a run into a conversation
//     (the run is shown the conversation's earlier messages: `reads`);
//   - CANCEL, SCORE: stopping runs, scoring (admitRun's multitask INTERRUPT and a schedule whose
//     overlap is INTERRUPT stop runs too: they need CANCEL as well, checked where they cancel,
//     domain/runs/interrupt-rights.ts);
//   - DECIDE, the scope that approves tool calls: what decides them or changes which tools a run
//     gets and whether their calls wait for a person (MCP servers, skills, webhooks, which tell a
//     person a call waits);
//   - every scope (a full key): budgets, prices and trace retention, limits an agent must not lift,
//     and deleting a workspace, which nothing undoes (archiving it is ADMIT: restoreWorkspace undoes it);
//   - OWN: keys and tokens, only within the calling key's own scopes (checked where they are made
//     and revoked: domain/principal).
import type { AccessOperation } from "../domain/principal/access-scope.js";
import { encodeGlobalId } from "../domain/global-id.js";
import { parseEvidenceId } from "../domain/research/evidence.js";
import { missingVersion } from "../domain/research/publication-service.js";

type Args = Record<string, unknown>;
/** What a token outside the grants gets: null, NotFound, an error, or the answer the field gives for an id that names nothing. */
export type Denial = "null" | "notFound" | "error" | { answer: (args: Args) => unknown };
/** What a scoped API key needs: one operation, every one (`ALL`), or none beyond its own scopes (`OWN`). */
export type KeyNeed = AccessOperation | "ALL" | "OWN";
/**
 * What a field also needs READ on, because what it does shows it: the ids (a token needs READ on
 * each, a key the READ scope whenever there is one) and why, which ends the refusal's message.
 */
export type AlsoReads = { targets: (args: Args) => unknown[]; why: string };
/** A field an access token may use: the operation it needs and the ids it needs it on. */
export type TokenRule = {
  operation: AccessOperation;
  targets: (args: Args) => unknown[];
  denied: Denial;
  listed?: true;
  reads?: AlsoReads;
  keysOnly?: never;
};
/** A field no access token may use (it acts beyond any one resource): only what an API key needs. */
export type KeyRule = { operation: KeyNeed; keysOnly: true };
export type Rule = TokenRule | KeyRule;

const input = (args: Args) => (args.input ?? {}) as Args;
const listed = { operation: "READ", targets: () => [], denied: "null", listed: true } as const;
const keys = (operation: KeyNeed): KeyRule => ({ operation, keysOnly: true });

/** The global id of the message an evidence id names, or null. */
function messageOfEvidence(id: unknown): string | null {
  const ref = typeof id === "string" ? parseEvidenceId(id) : null;
  return ref ? encodeGlobalId("Message", ref.messageId) : null;
}

/** Every root field, keyed `Type.field`. */
export const ROOT_RULES: Readonly<Record<string, Rule>> = {
  "Query.node": { operation: "READ", targets: (a) => [a.id], denied: "null" },
  "Query.workspace": { operation: "READ", targets: (a) => [a.id], denied: "null" },
  "Query.run": { operation: "READ", targets: (a) => [a.id], denied: "null" },
  "Query.workspaces": listed,
  "Query.runs": listed,
  "Query.runsCount": listed,
  "Query.conversations": listed,
  "Query.searchHistory": { operation: "READ", targets: (a) => [a.workspaceId], denied: "notFound" },
  // Evidence lies in one log entry: readable where that message is (granted-nodes.ts).
  "Query.evidence": { operation: "READ", targets: (a) => [messageOfEvidence(a.id)], denied: "null" },
  "Query.readMaterial": {
    operation: "READ",
    targets: (a) => [a.publicationId],
    denied: { answer: (a) => missingVersion(a.version as number) },
  },
  // Scores: scoring needs SCORE on what is scored (a score's own id names its target); the configs are the principal's.
  "Query.scoreConfigs": listed,
  // The principal's own things: a key reads them with READ, a token never.
  "Query.agentProfile": keys("READ"),
  "Query.agentProfiles": keys("READ"),
  "Query.apiKeys": keys("READ"),
  "Query.artifacts": keys("READ"),
  "Query.mcpServers": keys("READ"),
  "Query.modelPrices": keys("READ"),
  "Query.publications": keys("READ"),
  "Query.skills": keys("READ"),
  "Query.viewer": keys("READ"),
  "Query.webhooks": keys("READ"),

  "Subscription.runEvents": { operation: "SUBSCRIBE", targets: (a) => [a.runId], denied: "error" },
  "Subscription.runOutput": { operation: "SUBSCRIBE", targets: (a) => [a.runId], denied: "error" },
  "Subscription.traceUpdates": { operation: "SUBSCRIBE", targets: (a) => [a.runId], denied: "error" },
  "Subscription.workspaceEvents": { operation: "SUBSCRIBE", targets: (a) => [a.workspaceId], denied: "error" },
  // A list: the subscription itself shows only the runs the token may subscribe to.
  "Subscription.runsChanged": { operation: "SUBSCRIBE", targets: () => [], denied: "error", listed: true },

  // A run admitted into a new conversation outside any workspace lies outside every grant. A run
  // admitted into a conversation is shown its earlier messages, and whoever admitted it reads its
  // answer: READ on the conversation too. (In a workspace without READ the run is told it may not
  // read it, and is shown nothing of it: runtime/workspace/unreadable-workspace.ts.)
  "Mutation.admitRun": {
    operation: "ADMIT",
    targets: (a) => {
      const ids = [input(a).workspaceId, input(a).conversationId].filter((id) => id != null);
      return ids.length > 0 ? ids : [null];
    },
    denied: "notFound",
    reads: {
      targets: (a) => [input(a).conversationId].filter((id) => id != null),
      why: "a run admitted into a conversation is shown its earlier messages",
    },
  },
  "Mutation.cancelRun": { operation: "CANCEL", targets: (a) => [input(a).runId], denied: "notFound" },
  // Pausing and resuming stop and restart the run's spending as cancelling does: the same grant.
  "Mutation.pauseRun": { operation: "CANCEL", targets: (a) => [input(a).runId], denied: "notFound" },
  "Mutation.resumeRun": { operation: "CANCEL", targets: (a) => [input(a).runId], denied: "notFound" },
  "Mutation.decideToolCall": { operation: "DECIDE", targets: (a) => [input(a).runId], denied: "notFound" },
  "Mutation.createScore": { operation: "SCORE", targets: (a) => [input(a).targetId], denied: "notFound" },
  "Mutation.deleteScore": { operation: "SCORE", targets: (a) => [input(a).id], denied: "notFound" },
  "Mutation.createScoreConfig": keys("SCORE"),
  // Steering adds a person's message to the run's conversation, as admitting a run there does.
  "Mutation.steerRun": { operation: "ADMIT", targets: (a) => [input(a).runId], denied: "notFound" },
  // Tags are given at admission: changing them later takes the same right.
  "Mutation.updateRunTags": { operation: "ADMIT", targets: (a) => [input(a).runId], denied: "notFound" },

  // Research: workspaces, conversations, artifacts, publications and the schedules that admit runs.
  "Mutation.createWorkspace": keys("ADMIT"),
  "Mutation.updateGoal": keys("ADMIT"),
  "Mutation.updateCheckpoint": keys("ADMIT"),
  "Mutation.linkToWorkspace": keys("ADMIT"),
  "Mutation.unlinkFromWorkspace": keys("ADMIT"),
  "Mutation.archiveWorkspace": keys("ADMIT"),
  "Mutation.restoreWorkspace": keys("ADMIT"),
  "Mutation.startConversation": keys("ADMIT"),
  "Mutation.forkConversation": keys("ADMIT"),
  "Mutation.createArtifact": keys("ADMIT"),
  "Mutation.retainArtifact": keys("ADMIT"),
  "Mutation.publishVersion": keys("ADMIT"),
  "Mutation.revokePublicationVersion": keys("ADMIT"),
  "Mutation.createSchedule": keys("ADMIT"),
  "Mutation.updateSchedule": keys("ADMIT"),
  "Mutation.deleteSchedule": keys("ADMIT"),
  "Mutation.pauseSchedule": keys("ADMIT"),
  "Mutation.resumeSchedule": keys("ADMIT"),
  "Mutation.triggerSchedule": keys("ADMIT"),

  // Which tools a run gets and whether their calls wait for a person: the scope that approves.
  "Mutation.upsertMcpServer": keys("DECIDE"),
  "Mutation.deleteMcpServer": keys("DECIDE"),
  "Mutation.upsertSkill": keys("DECIDE"),
  "Mutation.deleteSkill": keys("DECIDE"),
  // Webhooks tell a person that a call waits (RUN_WAITING), and carry the principal's events out.
  "Mutation.createWebhook": keys("DECIDE"),
  "Mutation.updateWebhook": keys("DECIDE"),
  "Mutation.deleteWebhook": keys("DECIDE"),
  "Mutation.rotateWebhookSecret": keys("DECIDE"),
  "Mutation.redeliverWebhookEvent": keys("DECIDE"),

  // Limits on spending and on how long traces are kept, and deleting a workspace (nothing undoes it): a full key.
  "Mutation.setWorkspaceBudget": keys("ALL"),
  "Mutation.setModelPrice": keys("ALL"),
  "Mutation.setRetentionPolicy": keys("ALL"),
  "Mutation.pinTrace": keys("ALL"),
  "Mutation.unpinTrace": keys("ALL"),
  "Mutation.deleteWorkspace": keys("ALL"),

  // Keys and tokens: never beyond the calling key's own scopes (domain/principal).
  "Mutation.createApiKey": keys("OWN"),
  "Mutation.revokeApiKey": keys("OWN"),
  "Mutation.createAccessToken": keys("OWN"),
};

/** The operations a key with these scopes lacks for this rule (none for `OWN`, checked where keys and tokens are made). */
export function missingScopes(rule: Rule, scopes: readonly AccessOperation[], all: readonly AccessOperation[]): AccessOperation[] {
  if (rule.operation === "OWN") return [];
  const needed = rule.operation === "ALL" ? all : [rule.operation];
  return needed.filter((operation) => !scopes.includes(operation));
}
