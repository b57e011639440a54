// createAccessToken: a short-lived token for a browser, naming the resources and operations it
// may use (domain/principal/access-tokens.ts mints it; graphql/access-grants.ts enforces it).
import { ForbiddenError, NotFoundError, ValidationError } from "../../domain/errors.js";
import type { ACCESS_OPERATIONS } from "../../domain/principal/access-scope.js";
import { DEFAULT_TOKEN_SECONDS, MAX_TOKEN_SECONDS } from "../../domain/principal/access-tokens.js";
import { builder } from "../builder.js";
import { RunCapsInput } from "./run-caps.js";

export const AccessOperationEnum = builder.enumType("AccessOperation", {
  description: "What an access token may do with a granted resource.",
  values: {
    READ: {
      description: "Read it (node, workspace, run, the lists; for a workspace also searchHistory and readMaterial of its history) and everything linked to it.",
    },
    SUBSCRIBE: {
      description:
        "Watch it live: runEvents, runOutput, traceUpdates, workspaceEvents (for a workspace, also the runs linked to it or to a linked conversation). A run watched through a link only while the link lasts: unlinking it (or its conversation), or deleting the workspace, ends its open streams with an error of code GRANT_WITHDRAWN, and nothing the run does after reaches them.",
    },
    ADMIT: {
      description:
        "Admit runs into it (a workspace or a conversation), and steer its runs (steerRun): both add a person's message to a conversation. A run's materials, and what its read_material reads, come only from the histories of the workspaces the token may READ.",
    },
    DECIDE: { description: "Approve or reject its runs' held tool calls (decideToolCall): the way a UI lets its user decide." },
    CANCEL: { description: "Cancel its runs." },
    SCORE: {
      description:
        "Score it (createScore, deleteScore): a run, and the spans, publication versions and checkpoint versions its READ reaches. deleteScore removes only the scores this token made, never the team's. Reading scores needs READ only.",
    },
  } satisfies Record<(typeof ACCESS_OPERATIONS)[number], { description: string }>,
});

const AccessGrantInput = builder.inputType("AccessGrantInput", {
  description: "One resource and what the token may do with it.",
  fields: (t) => ({
    resourceId: t.id({ required: true, description: "A Workspace (and everything linked to it), a Conversation or a Run of yours." }),
    operations: t.field({ type: [AccessOperationEnum], required: true }),
  }),
});

const CreateAccessTokenInput = builder.inputType("CreateAccessTokenInput", {
  fields: (t) => ({
    grants: t.field({ type: [AccessGrantInput], required: true, description: "At most 20." }),
    expiresInSeconds: t.int({ description: `Lifetime: ${DEFAULT_TOKEN_SECONDS} seconds by default, from 1 to ${MAX_TOKEN_SECONDS}.` }),
    label: t.string({ description: "Your note on what the token is for (at most 100 characters)." }),
    endUser: t.string({
      description:
        "The end user of your product the token is for, as your backend names them (at most 200 characters, no control characters; carried in the token, and kept with the runs it admits, so an opaque id rather than an email). Every token one of your keys mints for one end user shares one request-rate bucket, MAX_SUBSCRIPTIONS_PER_TOKEN subscription places and a quarter of the tokens' queued places, and (for the same grants) its idempotency keys, so a page reloaded or a token minted again wins no fresh share, while other end users (even with the same grants) keep theirs. Without it, each token has a bucket and places of its own, and the tokens' half of the queue alone holds its runs.",
    }),
    runCaps: t.field({
      type: RunCapsInput,
      description:
        "Caps on the runs the token may admit (carried in the token, nothing stored): so that one end user of your product cannot spend the whole budget, go ahead of the others' runs or pick a powerful agent profile. Never wider than the minting key's, whose caps it inherits where these say nothing.",
    }),
  }),
});

const CreateAccessTokenSuccess = builder.objectRef<{ token: string; expiresAt: Date }>("CreateAccessTokenSuccess").implement({
  fields: (t) => ({
    token: t.exposeString("token", { description: "Send it as `Authorization: Bearer <token>` (HTTP, SSE) or in graphql-ws connection parameters." }),
    expiresAt: t.expose("expiresAt", {
      type: "DateTime",
      description: 'When it stops working; its subscriptions then close (WebSocket code 4401, "token expired").',
    }),
  }),
});

builder.mutationField("createAccessToken", (t) =>
  t.field({
    type: CreateAccessTokenSuccess,
    description:
      "Mints a short-lived token for a browser: it sees only the granted resources (node(id) of anything else is null, lists are filtered, mutations outside the grants are NotFound) and can never mint tokens or manage keys, webhooks, MCP servers, skills or agent profiles. A run it admits is offered no MCP tools (MCP servers act with your credentials, not the token's grants) and reads materials only of the workspaces it may READ. Only an API key can mint one (ForbiddenError otherwise); revoking that key revokes its tokens at once.",
    args: { input: t.arg({ type: CreateAccessTokenInput, required: true }) },
    errors: { types: [ForbiddenError, NotFoundError, ValidationError], directResult: true, union: { name: "CreateAccessTokenPayload" } },
    resolve: (_root, { input }, ctx) =>
      ctx.services.accessTokens.mint(ctx.actor, {
        grants: input.grants.map((grant) => ({ resourceId: String(grant.resourceId), operations: grant.operations })),
        expiresInSeconds: input.expiresInSeconds,
        label: input.label,
        endUser: input.endUser,
        runCaps: input.runCaps,
      }),
  }),
);
