// What the steering tests share: a run of several tool-calling turns whose tool a test can hold,
// a client that steers it, and what the run's log, its model requests and its inputs say.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { DossierClient } from "../../sdk/client.js";
import { RunInputsDocument, SteerRunDocument } from "../../sdk/generated/graphql.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import type { RunHooks } from "../../src/runtime/loop/attempt.js";
import type { ChatMessage } from "../../src/runtime/ports/model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";

/** A gate a tool call waits at until the test opens it (or the attempt is stopped). */
export class Gate {
  private opened = false;
  private waiters: (() => void)[] = [];
  /** How many calls reached the gate. */
  reached = 0;

  open(): void {
    this.opened = true;
    for (const wake of this.waiters.splice(0)) wake();
  }

  pass(signal: AbortSignal): Promise<void> {
    this.reached += 1;
    if (this.opened) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiters.push(resolve);
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  }
}

/** Holds every attempt at `gate` before its first turn: between its claim and its first model request. */
export const heldAtStart = (gate: Gate): RunHooks => ({ beforeFirstTurn: (start) => () => gate.pass(start.signal) });

/** `work`: waits at `gate` on its `holdCalls` first calls, then takes `ms`; returns "worked". */
export function workTool({ gate, holdCalls = 1, ms = 0 }: { gate?: Gate; holdCalls?: number; ms?: number } = {}): Tool {
  let calls = 0;
  return {
    schema: { name: "work", description: "does some work", parameters: { type: "object", properties: {} } },
    async execute(_args, { signal }) {
      calls += 1;
      if (gate && calls <= holdCalls) await gate.pass(signal);
      if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
      return "worked";
    },
  };
}

/** Calls `work` once per turn until the request carries `turns` results, then answers "done" (after `answerDelayMs`). */
export function turnsModel(turns: number, { answerDelayMs = 0 } = {}): ScriptedModel {
  return new ScriptedModel({
    name: "steered",
    steps: (request) =>
      request.messages.filter((m) => m.role === "tool").length < turns
        ? { toolCalls: [{ name: "work", arguments: {} }] }
        : { content: "done", delayMs: answerDelayMs },
  });
}

export const sandbox = () => mkdtempSync(path.join(tmpdir(), "dossier-steer-"));

export const steer = (client: DossierClient, runId: string, text: string, idempotencyKey?: string) =>
  client.request(SteerRunDocument, { input: { runId, text, idempotencyKey } }).then((result) => result.steerRun);

export async function inputsOf(client: DossierClient, runId: string) {
  const result = await client.request(RunInputsDocument, { id: runId, first: 500 });
  if (result.node?.__typename !== "Run") throw new Error("no such run");
  return result.node.inputs.edges.map((edge) => edge.node);
}

/** How many times `text` occurs in the messages of a request (a joined user message holds several inputs). */
export const occurrences = (messages: readonly ChatMessage[], text: string) =>
  messages.reduce((n, message) => n + (typeof message.content === "string" ? message.content.split(text).length - 1 : 0), 0);
