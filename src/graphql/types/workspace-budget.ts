// A workspace's monthly budget (issue 40): Workspace.monthlyBudget and setWorkspaceBudget, its owner's.
import { NotFoundError, ValidationError } from "../../domain/errors.js";
import type { Workspace } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { requireIdOfType } from "../global-id.js";
import { decimalString } from "./money.js";
import { WorkspaceNode } from "./workspace.js";

builder.prismaObjectFields(WorkspaceNode, (t) => ({
  monthlyBudget: t.field({
    type: "Decimal",
    nullable: true,
    description:
      "USD the runs admitted in the workspace may spend in a UTC calendar month, set by its owner (setWorkspaceBudget); null: no budget. A run that would cross it stops before its model request with stopReason BUDGET.",
    resolve: (workspace) => (workspace.monthlyBudget === null ? null : decimalString(workspace.monthlyBudget)),
  }),
}));

const SetWorkspaceBudgetInput = builder.inputType("SetWorkspaceBudgetInput", {
  fields: (t) => ({
    workspaceId: t.id({ required: true }),
    monthlyBudget: t.field({
      type: "Decimal",
      description: 'USD a month, such as "100" (more than 0, at most 10 decimal places); null or omitted clears the budget.',
    }),
  }),
});

const SetWorkspaceBudgetSuccess = builder.objectRef<{ workspace: Workspace }>("SetWorkspaceBudgetSuccess").implement({
  fields: (t) => ({ workspace: t.field({ type: WorkspaceNode, resolve: (result) => result.workspace }) }),
});

builder.mutationField("setWorkspaceBudget", (t) =>
  t.field({
    type: SetWorkspaceBudgetSuccess,
    description:
      "Sets or clears the workspace's monthly budget (Workspace.monthlyBudget); only its owner can. It applies from the next model request of its runs, the running ones too.",
    args: { input: t.arg({ type: SetWorkspaceBudgetInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "SetWorkspaceBudgetPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      workspace: await ctx.services.workspaces.setMonthlyBudget(ctx.actor, {
        workspaceId: requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId"),
        monthlyBudget: input.monthlyBudget ?? null,
      }),
    }),
  }),
);
