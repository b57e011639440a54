// A scripted model whose one reply streams in pieces: the first at once, each next one once the
// test lets it go (`release[i]` lets piece i + 1 go; the reply ends after the last). Summaries are
// the scripted model's own.
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { isSummaryRequest } from "../../src/runtime/memory/summary.js";
import type { ModelRequest, ModelResponse, ModelStreamEvent } from "../../src/runtime/ports/model.js";

export class PacedModel extends ScriptedModel {
  readonly release: (() => void)[] = [];
  private readonly gates: Promise<void>[];

  constructor(private readonly pieces: string[]) {
    super({ name: "paced", steps: [] });
    this.gates = pieces.slice(1).map(() => new Promise<void>((resolve) => this.release.push(resolve)));
  }

  /** Lets every piece still held go. */
  releaseAll(): void {
    for (const release of this.release) release();
  }

  override async complete(request: ModelRequest, onEvent?: (event: ModelStreamEvent) => void): Promise<ModelResponse> {
    if (isSummaryRequest(request)) return super.complete(request, onEvent);
    for (const [index, piece] of this.pieces.entries()) {
      if (index > 0) await this.gates[index - 1];
      onEvent?.({ type: "text", delta: piece });
    }
    const content = this.pieces.join("");
    return { content, toolCalls: [], usage: { input: 10, output: 10, cached: 0, reasoning: 0 }, finishReason: "stop", model: this.label };
  }
}
