// Runs driven by their question: a scripted model that makes the tool calls the question lists
// (as JSON), then answers with the tool results, so a test can steer a run through admission.
import { vi } from "vitest";
import type { DossierClient, RunTrace } from "../../sdk/client.js";
import type { ChatMessage } from "../../src/runtime/ports/model.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { questionOf } from "./requests.js";

/** A run with every attempt, span and event (client.runTrace()). */
export type RunView = RunTrace;

/** A tool call a question asks for; `id` replaces the scripted model's own (repeated or empty ids). */
type Call = { name: string; arguments?: unknown; id?: string };

/** The question of a run that calls these tools in one turn, then answers with their results joined by "\n---\n". */
export const callTools = (...calls: Call[]) => JSON.stringify({ turns: [calls] });

/** Like callTools, one turn after the other; the answer joins the results of every turn. */
export const callToolsInTurns = (...turns: Call[][]) => JSON.stringify({ turns });

export function toolCallingModel(name = "tools", contextWindow?: number): ScriptedModel {
  return new ScriptedModel({
    name,
    contextWindow,
    steps: (request) => {
      const start = request.messages.findLastIndex((m) => m.role === "user");
      const { turns } = JSON.parse(questionOf(request.messages[start]!.content)) as { turns: Call[][] };
      const since = request.messages.slice(start + 1) as ChatMessage[];
      const turn = since.filter((m) => m.role === "assistant").length;
      if (turn < turns.length)
        return { toolCalls: turns[turn]!.map((call) => ({ name: call.name, arguments: call.arguments ?? {}, ...(call.id !== undefined && { id: call.id }) })) };
      return { content: since.flatMap((m) => (m.role === "tool" ? [m.content] : [])).join("\n---\n") };
    },
  });
}

/** A tool call's decision as its span records it (an APPROVAL_DECIDED event's payload). */
export type RecordedDecision = {
  span: string;
  seq: number;
  toolCallId: string;
  toolName: string;
  decision: "APPROVE" | "REJECT";
  decidedBy: string | null;
  reason: string | null;
  decidedAt: string;
};

/** The APPROVAL_DECIDED events of a run's trace, oldest first, each with its span's kind. */
export function recordedDecisions(run: RunView): RecordedDecision[] {
  return run
    .trace!.spans.flatMap((span) =>
      span.events.filter((event) => event.kind === "APPROVAL_DECIDED").map((event) => ({ span: span.kind, seq: event.seq, ...JSON.parse(event.preview) })),
    )
    .sort((a, b) => a.seq - b.seq);
}

/** Polls the run until it is terminal (neither QUEUED, RUNNING, WAITING nor PAUSED). */
export function settled(client: DossierClient, runId: string, timeoutMs = 20_000): Promise<RunView> {
  return vi.waitFor(
    async () => {
      const run = (await client.runTrace(runId))!;
      if (["QUEUED", "RUNNING", "WAITING", "PAUSED"].includes(run.status)) throw new Error(`run still ${run.status}`);
      return run;
    },
    { timeout: timeoutMs, interval: 50 },
  );
}

/** Polls the run's trace until a span of this kind has started. */
export async function spanStarted(client: DossierClient, runId: string, kind: string, timeoutMs = 20_000): Promise<void> {
  await vi.waitFor(
    async () => {
      const run = (await client.runTrace(runId))!;
      if (!run.trace?.spans.some((span) => span.kind === kind)) throw new Error(`no ${kind} span in run ${runId}`);
    },
    { timeout: timeoutMs, interval: 25 },
  );
}
