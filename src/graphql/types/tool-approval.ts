// Human approval of tool calls: the requests a run's calls wait on, and the owner's decision.
import { AlreadyDecidedError, ForbiddenError, NotFoundError, RunNotWaitingError, ValidationError } from "../../domain/errors.js";
import { argumentWarnings, type ReadableArguments, readableArguments } from "../../../sdk/readable-arguments.js";
import { EDITED_ARGUMENTS_MAX } from "../../domain/runs/tool-arguments.js";
import { fromStored } from "../../domain/text/stored-text.js";
import type { Run, ToolApproval } from "../../generated/prisma/client.js";
import { ToolApprovalDecision } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { encodeGlobalId, requireIdOfType } from "../global-id.js";
import { largeText } from "../large-text.js";
import { describePage, LIST_PAGE, type KeysetList, readConnection, listConnection } from "../list-connection.js";
import { ErrorInterface } from "./errors.js";
import { RunStatusEnum } from "./run-filter.js";
import { me } from "./owned.js";
import { RunNode } from "./run.js";

const ToolApprovalDecisionEnum = builder.enumType(ToolApprovalDecision, {
  name: "ToolApprovalDecision",
  values: {
    APPROVE: { description: "The call executes, on whichever instance claims the run next." },
    REJECT: { description: "The call does not execute: the model is told the person declined it, with the reason." },
    EDIT: {
      description:
        "The call executes with the arguments the decision gives (DecideToolCallInput.arguments) instead of the model's. They must fit the tool's input schema (a ValidationError naming the field otherwise, and the call keeps waiting). " +
        "The conversation log keeps the model's request as it was; the call's result tells the model which arguments ran, and its span records both and who edited. " +
        "The call runs with the reach of whoever admitted the run, so an access token edits only a call of a run an access token admitted that reads no more than it may (as for steerRun); on any other run EDIT is a ForbiddenError and the call keeps waiting (APPROVE and REJECT decide the model's own call and stay allowed).",
    },
  },
});

const ReadableArgumentsRef = builder.objectRef<ReadableArguments>("ReadableArguments").implement({
  description:
    "A held call's arguments as a person should read them before deciding: the values the tool gets, whatever escapes the model wrote them with, " +
    "with every character a person would not see as it is shown as its escape. What a person decides on should be shown from this, not from ToolApproval.arguments.",
  fields: (t) => ({
    text: t.exposeString("text", {
      extensions: largeText(),
      description:
        "The arguments decoded as the call runs them (JSON.parse) and written again as compact JSON: `\\u0072\\u006d` reads rm, whitespace between values is gone. " +
        "Each invisible, bidi, format or control character, blank other than U+0020, unassigned or private-use code point, and each mark of four or more stacked on one character is shown as its escape (\\u202E, \\u{E0041}); " +
        'each word that mixes Latin, Greek and Cyrillic letters is shown after a ⚠ ("⚠gіthub"); each run of more than 32 blanks (spaces, and tabs and line breaks, which JSON writes \\t, \\n, \\r) as its count ("⚠[38 spaces, 2 line breaks]"), so that it cannot push what follows out of view. ' +
        "A ⚠ the arguments hold themselves is shown as its escape, \\u26A0: every ⚠ in the text is one of these marks, never the model's. " +
        "Arguments that are not JSON (a call recorded before those were refused) are shown as written, so marked. Never cut.",
    }),
    hiddenCharacters: t.exposeInt("hiddenCharacters", {
      description: "How many characters text shows as escapes because a person would not see them as they are.",
    }),
    escapedCharacters: t.exposeInt("escapedCharacters", {
      description:
        "How many ASCII characters the model wrote as \\u escapes (\\u0072 for r), which text shows decoded: a model rarely does so unless it hides what it asks for.",
    }),
    blankRuns: t.exposeInt("blankRuns", {
      description: "How many runs of more than 32 blanks (spaces, tabs, line breaks) text shows as their count, which would push what follows out of view.",
    }),
    warningSigns: t.exposeInt("warningSigns", {
      description: "How many ⚠ signs the arguments hold themselves, which text shows as their escape (\\u26A0) so that none passes for one of its marks.",
    }),
    mixedScriptWords: t.exposeInt("mixedScriptWords", {
      description: "How many words of the arguments mix Latin, Greek and Cyrillic letters, which can look alike; text shows each after a ⚠.",
    }),
    warnings: t.stringList({
      description:
        "What to tell the person above the arguments, one sentence for each kind counted (hiddenCharacters, escapedCharacters, blankRuns, warningSigns, mixedScriptWords); empty for plain arguments.",
      resolve: (readable) => argumentWarnings(readable),
    }),
  }),
});

export const ToolApprovalRef = builder.prismaObject("ToolApproval", {
  description:
    "A tool call that waits (or waited) for a person's decision before it executes. While any call of a run waits, the run is WAITING and no worker holds it, but it keeps its conversation's slot: " +
    "the conversation's next run (admitted with ENQUEUE) starts only once this run has ended. The call's TOOL_CALL span has an APPROVAL_REQUESTED event, and an APPROVAL_DECIDED event once it is decided.",
  fields: (t) => ({
    id: t.id({ resolve: (approval) => encodeGlobalId("ToolApproval", approval.id) }),
    toolCallId: t.exposeString("toolCallId", {
      description:
        "The call's id in its run: what decideToolCall names. The model's own, unless it gave none, repeated one within its reply or gave one the run had used (then one of Dossier's, which runOutput streams the call under and the model is shown from then on): no two calls of a run share one.",
    }),
    toolName: t.exposeString("toolName", { description: 'As the model sees it, e.g. "run_command" or "mcp__github__create_issue".' }),
    mcpTool: t.string({
      nullable: true,
      resolve: (approval) => (approval.mcpTool === null ? null : fromStored(approval.mcpTool)),
      description:
        'The MCP tool the call is for, as its server names it: "<server>/<tool>" (e.g. "github/create.issue"), neither cut nor replaced as toolName may be. ' +
        "Approved, the call runs only if toolName still means this tool when it would run; if the server's tool list changed so that it means another, the call is not run and the model is told the tool changed since it was approved. " +
        "Null for Dossier's own tools.",
    }),
    arguments: t.string({
      extensions: largeText(),
      description:
        "The call's arguments, exactly as the model gave them (JSON text). They may hold characters a person does not see that reorder or hide the text around them (bidi overrides and isolates, zero-width characters), " +
        "or escapes that hide what they say (\\u0072\\u006d for rm): show a person readableArguments instead, as the trace viewer does.",
      resolve: (a) => fromStored(a.arguments),
    }),
    readableArguments: t.field({
      type: ReadableArgumentsRef,
      description: "The arguments as a person should read them before deciding: decoded as the tool gets them, hidden characters shown as escapes and counted.",
      resolve: (a) => readableArguments(fromStored(a.arguments)),
    }),
    editedArguments: t.string({
      nullable: true,
      extensions: largeText(EDITED_ARGUMENTS_MAX),
      description: "EDIT: the arguments the call runs (or ran) with instead of the model's (JSON text); null for any other decision.",
      resolve: (a) => (a.editedArguments === null ? null : fromStored(a.editedArguments)),
    }),
    requestedAt: t.expose("requestedAt", { type: "DateTime" }),
    expiresAt: t.expose("expiresAt", {
      type: "DateTime",
      description: 'Undecided by then, the call counts as rejected with the reason "no decision in time".',
    }),
    decision: t.expose("decision", {
      type: ToolApprovalDecisionEnum,
      nullable: true,
      description: "Null while the call waits. Once decided, the call's span shows it at once (an APPROVAL_DECIDED event, traceUpdates).",
    }),
    decidedBy: t.prismaField({
      type: "Principal",
      nullable: true,
      description: "Who decided; null while undecided, or when nobody did (it expired, the run ended).",
      resolve: (query, approval, _args, ctx) =>
        approval.decidedBy ? ctx.prisma.principal.findFirst({ ...query, where: { id: approval.decidedBy, AND: [me(ctx)] } }) : null,
    }),
    reason: t.exposeString("reason", { nullable: true, description: "Why it was decided so: the person's words, or why it closed without one." }),
    decidedAt: t.expose("decidedAt", { type: "DateTime", nullable: true }),
  }),
});

const PENDING: KeysetList = {
  typename: "ToolApproval",
  order: [
    ["requestedAt", "asc"],
    ["id", "asc"],
  ],
  ...LIST_PAGE,
};

builder.prismaObjectFields(RunNode, (t) => ({
  pendingApprovals: listConnection(t, {
    type: "ToolApproval",
    name: "ToolApprovalConnection",
    description: describePage(
      "The run's tool calls waiting for your decision (decideToolCall), oldest first. Empty unless the run is WAITING or about to be.",
      PENDING,
    ),
    list: PENDING,
    resolve: (query, run: Run, args, ctx) =>
      readConnection<ToolApproval>(ctx.prisma.toolApproval, PENDING, args, { scope: { runId: run.id, decision: null }, query }),
  }),
}));

builder.objectType(AlreadyDecidedError, {
  name: "AlreadyDecidedError",
  description: "The call was already decided (by a decision before this one, by expiry, or because the run ended); the first decision stands.",
  interfaces: [ErrorInterface],
  fields: (t) => ({ approval: t.field({ type: ToolApprovalRef, resolve: (error) => error.approval }) }),
});

builder.objectType(RunNotWaitingError, {
  name: "RunNotWaitingError",
  description:
    "The run does not wait for decisions now: a call is decided only while its run is WAITING (or PAUSED while it waited). " +
    "While the run is RUNNING an attempt holds it, and a tool the run itself calls could be the one deciding, so nothing is decided then; " +
    "the request stays open. Decide it once the run is WAITING (runEvents says when).",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    approval: t.field({ type: ToolApprovalRef, description: "The open request, undecided.", resolve: (error) => error.approval }),
    status: t.field({ type: RunStatusEnum, description: "The run's status when the decision came.", resolve: (error) => error.status }),
  }),
});

const DecideToolCallInput = builder.inputType("DecideToolCallInput", {
  fields: (t) => ({
    runId: t.id({ required: true }),
    toolCallId: t.string({ required: true, description: "ToolApproval.toolCallId." }),
    approvalId: t.id({
      description:
        "Optional: ToolApproval.id of the request you decide (the one you were shown). The decision then takes that request or nothing: NotFoundError when it is not a request of this run and call, AlreadyDecidedError when it was decided already. Without it, the call's open request is decided.",
    }),
    decision: t.field({ type: ToolApprovalDecisionEnum, required: true }),
    reason: t.string({
      description:
        "Shown to the model with a rejection; kept with any decision. At most 2,000 characters. The model reads it next, as a steering message: an access token gives one with REJECT only on a run it may steer (ForbiddenError otherwise; a rejection without a reason is taken).",
    }),
    arguments: t.field({
      type: "JSON",
      description:
        "EDIT only (required with it, refused with APPROVE and REJECT): the JSON object of arguments the call runs with, checked against the tool's input schema. At most 100,000 characters of JSON. " +
        "A number it holds must run as written: an integer past ±(2^53 - 1) or a number past the double range is refused (ValidationError naming its path), since it arrives rounded; write such a value as a string. " +
        "The schema is the tool's own (an MCP server's), so it is checked without its regular expressions (pattern, patternProperties, format); " +
        "a schema of more than 100,000 characters or nested more than 64 deep, or one whose check of these arguments would take more than 50,000 steps " +
        "(every subschema applied to every value it reaches, references and combinations followed; a step per keyword, listed value and argument entry), " +
        "is not applied: only a JSON object is required. The tool checks what it is given either way.",
    }),
  }),
});

const DecideToolCallSuccess = builder.objectRef<{ approval: ToolApproval; run: Run }>("DecideToolCallSuccess").implement({
  fields: (t) => ({
    approval: t.field({ type: ToolApprovalRef, resolve: (result) => result.approval }),
    run: t.field({ type: RunNode, description: "The run as the decision left it: RUNNING again once no call of it waits.", resolve: (result) => result.run }),
  }),
});

builder.mutationField("decideToolCall", (t) =>
  t.field({
    type: DecideToolCallSuccess,
    description:
      "Approves, edits (approves with your arguments) or rejects one of your run's tool calls that waits for a decision; editing needs the same right as approving (DECIDE), and an access token edits only the calls of runs that read no more than it may (ForbiddenError otherwise: see EDIT). Exactly one decision counts; once none of the run's calls waits, the run resumes on whichever instance claims it. " +
      "Only while the run waits (WAITING, or PAUSED while it waited): on a RUNNING run, RunNotWaitingError, and the call keeps waiting.",
    args: { input: t.arg({ type: DecideToolCallInput, required: true }) },
    errors: {
      types: [AlreadyDecidedError, ForbiddenError, NotFoundError, RunNotWaitingError, ValidationError],
      directResult: true,
      union: { name: "DecideToolCallPayload" },
    },
    resolve: async (_root, { input }, ctx) => {
      const runId = requireIdOfType(String(input.runId), "Run", "runId");
      const approvalId = input.approvalId == null ? null : requireIdOfType(String(input.approvalId), "ToolApproval", "approvalId");
      const approval = await ctx.services.toolApprovals.decide(ctx.actor, {
        approvalId,
        runId,
        toolCallId: input.toolCallId,
        decision: input.decision,
        reason: input.reason,
        arguments: input.arguments,
      });
      return { approval, run: await ctx.prisma.run.findUniqueOrThrow({ where: { id: runId } }) };
    },
  }),
);
