// The payload step of each turn (R10, R12): spills tool outputs over their tool's threshold,
// inside the call's own span, with a SPILL event there. Concurrent calls of one turn each get
// their own handle — the tool call id keeps handles apart, and a repeated id (a model that
// reuses ids across runs of a conversation) gets a suffix rather than another call's handle.
import { fromStored, toStored } from "../../domain/text/stored-text.js";
import { DEFAULT_SPILL_POLICY, READ_SPILL_TOOL, type SpillPolicy } from "./spill-policy.js";
import type { RunRecord } from "../ports/run-state.js";
import type { PayloadStep, SpillStore } from "../ports/spill-store.js";
import type { TraceSink } from "../ports/trace-sink.js";
import { planSpill, renderSpilled, spillHandle } from "./spill-plan.js";

export class Spiller {
  constructor(private readonly deps: { store: SpillStore; policies?: Record<string, Partial<SpillPolicy>> }) {}

  /** The tool's policy: its own entry over the "*" entry over the defaults. read_spill never spills. */
  policyFor(toolName: string): SpillPolicy {
    const policies = this.deps.policies ?? {};
    const policy = { ...DEFAULT_SPILL_POLICY, ...policies["*"], ...policies[toolName] };
    return toolName === READ_SPILL_TOOL ? { ...policy, enabled: false } : policy;
  }

  /** The payload step of one turn of `run`, recording through the attempt's trace. */
  forTurn(run: RunRecord, sink: TraceSink): PayloadStep {
    const taken = new Set<string>();
    return async (call, output, span) => {
      const policy = this.policyFor(call.name);
      if (!policy.enabled || output.length <= policy.thresholdChars) return null;
      const handle = await this.freeHandle(spillHandle(run.agent, run.conversationId, call.id), taken);
      // Reads slice the result as the log stores it, so sizes, offsets and the preview are of that form.
      const spill = planSpill({ output: toStored(output), toolName: call.name, handle, policy })!;
      await sink.event(span, "SPILL", {
        handle,
        tool: call.name,
        sizeBytes: spill.sizeBytes,
        sizeChars: spill.sizeChars,
        thresholdChars: policy.thresholdChars,
        strategy: spill.strategy,
        previewChars: spill.preview.length,
        previewItems: spill.previewItems,
        list: spill.list ? { path: spill.list.path, itemCount: spill.list.itemStarts.length } : null,
      });
      const shown = fromStored(
        renderSpilled({
          ...spill,
          listPath: spill.list?.path ?? null,
          itemCount: spill.list?.itemStarts.length ?? null,
          released: false,
        }),
      );
      return { spill, shown };
    };
  }

  private async freeHandle(base: string, taken: Set<string>): Promise<string> {
    for (let n = 1; ; n += 1) {
      const handle = n === 1 ? base : `${base}~${n}`;
      if (taken.has(handle)) continue;
      taken.add(handle);
      if (!(await this.deps.store.find(handle))) return handle;
    }
  }
}
