// Runs driven by their question: a scripted model that makes the tool calls the question lists
// (as JSON), then answers with the tool results, so a test can steer a run through admission.
import type { DossierClient } from "../../sdk/client.js";
import { RunTraceDocument, type RunTraceQuery } from "../../sdk/generated/graphql.js";
import type { ChatMessage } from "../../src/runtime/ports/model.js";
import { ScriptedModel } from "../../src/runtime/testing/scripted-model.js";
import { expectType } from "./fixtures.js";

export type RunView = Extract<NonNullable<RunTraceQuery["node"]>, { __typename: "Run" }>;

/** The question of a run that calls these tools in one turn, then answers with their results joined by "\n---\n". */
export const callTools = (...calls: { name: string; arguments?: unknown }[]) => JSON.stringify({ calls });

export function toolCallingModel(name = "tools"): ScriptedModel {
  return new ScriptedModel({
    name,
    steps: (request) => {
      const last = request.messages.at(-1) as ChatMessage;
      if (last.role === "user") {
        const { calls } = JSON.parse(last.content) as { calls: { name: string; arguments?: unknown }[] };
        return { toolCalls: calls.map((call) => ({ name: call.name, arguments: call.arguments ?? {} })) };
      }
      const results: string[] = [];
      for (let i = request.messages.length - 1; i >= 0 && request.messages[i]!.role === "tool"; i -= 1) {
        results.unshift((request.messages[i] as { content: string }).content);
      }
      return { content: results.join("\n---\n") };
    },
  });
}

/** Polls the run until it leaves QUEUED/RUNNING. */
export async function settled(client: DossierClient, runId: string, timeoutMs = 20_000): Promise<RunView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = expectType((await client.request(RunTraceDocument, { id: runId })).node!, "Run");
    if (!["QUEUED", "RUNNING"].includes(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run still ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Polls the run's trace until a span of this kind has started. */
export async function spanStarted(client: DossierClient, runId: string, kind: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = expectType((await client.request(RunTraceDocument, { id: runId })).node!, "Run");
    if (run.trace?.spans.some((span) => span.kind === kind)) return;
    if (Date.now() > deadline) throw new Error(`no ${kind} span in run ${runId}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
