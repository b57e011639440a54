// Typed errors as data (A2). Every expected failure implements the Error interface, so a
// client can always read `... on Error { message }` and narrow by __typename for details.
import { LIST_ITEMS } from "../list-connection.js";
import {
  ApiKeyLimitError,
  ArtifactExpiredError,
  ArtifactStorageLimitError,
  type DomainError,
  ForbiddenError,
  ForkDepthLimitError,
  IdempotencyConflictError,
  IneligibleSourceError,
  NotFoundError,
  QueueFullError,
  ScheduleLimitError,
  ServiceUnavailableError,
  StaleRevisionError,
  StaleVersionError,
  UnsupportedError,
  ValidationError,
  type ValidationIssue,
  WorkspaceArchivedError,
} from "../../domain/errors.js";
import { builder } from "../builder.js";
import { encodeGlobalId } from "../global-id.js";

export const ErrorInterface = builder.interfaceRef<DomainError>("Error").implement({
  description: "An expected failure, returned as data in a mutation payload.",
  fields: (t) => ({ message: t.exposeString("message") }),
});

const ValidationIssueRef = builder.objectRef<ValidationIssue>("ValidationIssue").implement({
  description: "One problem with one input field.",
  fields: (t) => ({
    field: t.exposeString("field", { description: "Path of the field in the input, e.g. `statement`." }),
    message: t.exposeString("message"),
  }),
});

builder.objectType(ValidationError, {
  name: "ValidationError",
  description: "The input was rejected; nothing was written.",
  interfaces: [ErrorInterface],
  fields: (t) => ({ issues: t.field({ type: [ValidationIssueRef], extensions: { [LIST_ITEMS]: 100 }, resolve: (error) => error.issues }) }),
});

builder.objectType(NotFoundError, {
  name: "NotFoundError",
  description: "The object does not exist, or is not visible to the caller.",
  interfaces: [ErrorInterface],
  fields: () => ({}),
});

builder.objectType(StaleVersionError, {
  name: "StaleVersionError",
  description: "A compare-and-swap update lost: another update happened first. Nothing was written.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    currentVersion: t.exposeInt("currentVersion"),
    expectedVersion: t.exposeInt("expectedVersion"),
  }),
});

builder.objectType(StaleRevisionError, {
  name: "StaleRevisionError",
  description: "A checkpoint update expected a revision that is no longer current: another update happened first. Nothing was written.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    currentRevision: t.exposeInt("currentRevision"),
    expectedRevision: t.exposeInt("expectedRevision"),
  }),
});

builder.objectType(IneligibleSourceError, {
  name: "IneligibleSourceError",
  description: "A checkpoint update named a source that is not eligible (revoked, altered, or built on such a version). Nothing was written.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    sourceId: t.id({
      description: "The PublicationVersion named in `sources`.",
      resolve: (error) => encodeGlobalId("PublicationVersion", error.sourceVersionId),
    }),
    eligibilityReason: t.exposeString("reason", { description: "Why the source is not eligible, e.g. which version was revoked and why." }),
  }),
});

builder.objectType(IdempotencyConflictError, {
  name: "IdempotencyConflictError",
  description: "The idempotency key was already used for a different request; no run was admitted.",
  interfaces: [ErrorInterface],
  fields: (t) => ({ idempotencyKey: t.exposeString("idempotencyKey") }),
});

builder.objectType(WorkspaceArchivedError, {
  name: "WorkspaceArchivedError",
  description: "The workspace is archived: it takes no new links or admissions until restored.",
  interfaces: [ErrorInterface],
  fields: () => ({}),
});

builder.objectType(QueueFullError, {
  name: "QueueFullError",
  description:
    "You already have as many runs QUEUED as one principal may have waiting (the operator's MAX_QUEUED_RUNS_PER_PRINCIPAL), or, for a run of an access token, the principal's access tokens together hold half of those places, their share; nothing was admitted. A place frees up as soon as one of them starts, is paused or is cancelled. A retry with the idempotency key of an admission that did commit still answers that run.",
  interfaces: [ErrorInterface],
  fields: (t) => ({ maxQueuedRuns: t.exposeInt("maxQueuedRuns", { description: "The most runs one principal may have QUEUED at once." }) }),
});

builder.objectType(ScheduleLimitError, {
  name: "ScheduleLimitError",
  description:
    "You already have as many schedules as one principal may have (the operator's MAX_SCHEDULES_PER_PRINCIPAL, paused ones included); nothing was created. Deleting a schedule frees a place.",
  interfaces: [ErrorInterface],
  fields: (t) => ({ maxSchedules: t.exposeInt("maxSchedules", { description: "The most schedules one principal may have." }) }),
});

builder.objectType(ArtifactStorageLimitError, {
  name: "ArtifactStorageLimitError",
  description:
    "The artifact would take your artifacts past the bytes one principal may store (the operator's MAX_ARTIFACT_BYTES_PER_PRINCIPAL); nothing was created. Retained artifacts count, and so do temporary ones until they expire.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    maxBytes: t.exposeInt("maxBytes", { description: "The most bytes of artifact content one principal may store." }),
    bytesInUse: t.exposeInt("bytesInUse", { description: "Bytes your retained and unexpired temporary artifacts hold." }),
    size: t.exposeInt("size", { description: "Bytes of the refused artifact's content." }),
  }),
});

builder.objectType(ApiKeyLimitError, {
  name: "ApiKeyLimitError",
  description:
    "You already have as many live API keys as one principal may have (the operator's MAX_API_KEYS_PER_PRINCIPAL; revoked keys do not count); nothing was created. Revoking a key frees a place.",
  interfaces: [ErrorInterface],
  fields: (t) => ({ maxApiKeys: t.exposeInt("maxApiKeys", { description: "The most live API keys one principal may have." }) }),
});

builder.objectType(ForkDepthLimitError, {
  name: "ForkDepthLimitError",
  description:
    "The conversation is already a fork as many levels deep as a fork may be (a fork of a fork of …, maxForkDepth levels); nothing was created. Fork a conversation it forked from, at a message it shares, or start a new conversation.",
  interfaces: [ErrorInterface],
  fields: (t) => ({ maxForkDepth: t.exposeInt("maxForkDepth", { description: "The most levels of forks above one conversation." }) }),
});

builder.objectType(ForbiddenError, {
  name: "ForbiddenError",
  description:
    "You are known but may not do this: an access token was not granted this operation (or cannot do it at all: mint tokens, manage keys, webhooks, MCP servers, skills or agent profiles; steer a run, or edit a held call of one, that reads more than it may: one an API key admitted, or a token with other workspaces), or an API key lacks the scope.",
  interfaces: [ErrorInterface],
  fields: () => ({}),
});

builder.objectType(UnsupportedError, {
  name: "UnsupportedError",
  description: "The operation does not apply to this kind of object.",
  interfaces: [ErrorInterface],
  fields: () => ({}),
});

builder.objectType(ArtifactExpiredError, {
  name: "ArtifactExpiredError",
  description:
    "The temporary artifact is past its expiresAt: its content is no longer kept (or is about to be freed) and it can no longer be retained. Its name, type, size and dates still read.",
  interfaces: [ErrorInterface],
  fields: (t) => ({ expiredAt: t.expose("expiredAt", { type: "DateTime" }) }),
});

builder.objectType(ServiceUnavailableError, {
  name: "ServiceUnavailableError",
  description:
    "The database failed the request for a moment, not the request itself: it did not answer in time, no connection to it was free in time, the connection was lost, or a concurrent change won a conflict. Every payload union holds it. " +
    "A mutation's change may or may not have been made: after `retryAfterSeconds`, read the object to see before repeating the request. " +
    "Where the mutation takes an idempotency key, send the same key again: the retry answers with what was done, exactly once. " +
    "Queries and subscriptions answer the same failure with a GraphQL error whose extensions are { code: SERVICE_UNAVAILABLE, retryAfterSeconds } (over HTTP, with no data: status 503 and Retry-After).",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    retryAfterSeconds: t.exposeInt("retryAfterSeconds", { description: "Seconds to wait before trying again." }),
  }),
});
