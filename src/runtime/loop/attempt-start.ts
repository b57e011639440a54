// The start of an attempt's first turn: the reads of its tools and hooks that need no log go
// right after the claim, beside the attempt's opening reads (its log, approvals, profile and
// requests), not after them — one round trip less between the claim and the first model request.
import { allowedBy } from "../../domain/capabilities/agent-profile-versions.js";
import type { AgentProfile } from "../agents.js";
import type { Tool } from "../ports/tool.js";
import type { TraceSink } from "../ports/trace-sink.js";
import type { AttemptContext, AttemptScope, AttemptStart, ExecutorDeps } from "./attempt.js";
import type { Outcome } from "./outcome.js";

/** Builds the attempt's tools (those its profile allows) and runs its hooks, once its log and profile are read. */
export type FirstTurn = (scope: AttemptScope, profile: AgentProfile) => Promise<Map<string, Tool>>;

/**
 * Starts the reads of the attempt's tools and hooks; resolves once they are sent — with those of
 * the other runs of its claim, when it is one of several begun together (batched-reads.ts) — so
 * that the attempt's opening reads go after them, as they do for a run begun alone.
 */
export async function startFirstTurn(deps: Pick<ExecutorDeps, "tools" | "hooks">, start: AttemptStart): Promise<FirstTurn> {
  const tools = deps.tools(start);
  const hooks = (deps.hooks ?? []).flatMap((hook) => (hook.beforeFirstTurn ? [hook.beforeFirstTurn(start)] : []));
  // The runs begun together send their reads when the last of them began, right after this (a promise job later).
  await Promise.resolve();
  return async (scope, profile) => {
    // The tools are built beside the hooks: they read the run's own entries, which hooks do not change (a CONTEXT entry aside).
    const [offered] = await Promise.all([
      tools(scope.log.ofRun(), profile),
      (async () => {
        for (const hook of hooks) await hook(scope);
      })(),
    ]);
    return new Map(offered.filter((tool) => allowedBy(profile.tools, tool.schema.name)).map((tool) => [tool.schema.name, tool]));
  };
}

/** `read`, its failure thrown only where it is awaited (a read started early whose result no one awaits fails no one). */
export const caught = <T>(read: Promise<T>): Promise<T> => (read.catch(() => undefined), read);

/**
 * A run that answered: the trace records its end made and left queued (the final reply's event,
 * its turn's end) ride in its settle, one round trip for both (settle-statement.ts), instead of
 * being written first; the settle throws what failed in writing them, as any failed write of the
 * attempt does. False when the attempt's trace must be written before it settles.
 */
export function settlesAfter(attempt: Pick<AttemptContext, "fence">, sink: TraceSink, outcome: Outcome): boolean {
  if (outcome.type !== "final" || !sink.inOrder || !attempt.fence.writesAfter) return false;
  attempt.fence.writesAfter({ flushed: () => sink.flushed?.() ?? Promise.resolve(), inOrder: sink.inOrder.bind(sink) });
  return true;
}
