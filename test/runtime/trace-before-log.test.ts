// A run's trace is written behind its work (trace/record/write-behind.ts), but never behind its
// log: a tool's result enters the log only once the trace records made before it — its TOOL_CALL
// span first — are committed. Otherwise an attempt that lost its run between the two would leave
// a logged result whose span its fence then refused, and the trace would lack a call that ran.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const instant = (name: string): Tool => ({
  schema: { name, description: "answers at once", parameters: { type: "object" } },
  execute: async () => `${name} answered`,
});

describe.each(backends)("the trace before the log on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("logs instant tools' results only after their spans are written, however slow span writes are", async () => {
    const model = new ScriptedModel({
      name: "test",
      steps: [
        {
          toolCalls: [
            { name: "instant_a", arguments: {} },
            { name: "instant_b", arguments: {} },
          ],
        },
        { toolCalls: [{ name: "instant_a", arguments: {} }] },
        { content: "Done." },
      ],
    });
    t = await startTestApp(backend, {
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), extraTools: [instant("instant_a"), instant("instant_b")] },
    });
    // Every span row takes 150 ms to write, and the database refuses to commit a TOOL entry while
    // its run's trace holds fewer TOOL_CALL spans than the run has tool results (a span written
    // in the same statement as the entry counts: they commit together).
    await t.app.db.prisma.$executeRawUnsafe(`CREATE FUNCTION slow_span() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_sleep(0.15); RETURN NEW; END $$`);
    await t.app.db.prisma.$executeRawUnsafe("CREATE TRIGGER slow_span BEFORE INSERT ON span FOR EACH ROW EXECUTE FUNCTION slow_span()");
    await t.app.db.prisma.$executeRawUnsafe(`CREATE FUNCTION span_before_result() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.role = 'TOOL' AND (SELECT count(*) FROM span WHERE trace_id = NEW.run_id AND kind = 'TOOL_CALL')
            < (SELECT count(*) FROM message WHERE run_id = NEW.run_id AND role = 'TOOL') THEN
          RAISE EXCEPTION 'a tool result logged before its span';
        END IF;
        RETURN NEW;
      END $$`);
    await t.app.db.prisma.$executeRawUnsafe(
      "CREATE CONSTRAINT TRIGGER span_before_result AFTER INSERT ON message DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION span_before_result()",
    );

    const { run } = await admit(t.client, { question: "Ask both" });
    const done = await settled(t.client, run.id, 30_000);
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: "Done." });
    expect(done.messages.edges.map((e) => e.node.role)).toEqual(["USER", "ASSISTANT", "TOOL", "TOOL", "ASSISTANT", "TOOL", "ASSISTANT"]);
    const tools = done.trace!.spans.filter((s) => s.kind === "TOOL_CALL");
    expect(tools.map((s) => s.name).sort()).toEqual(["execute_tool instant_a", "execute_tool instant_a", "execute_tool instant_b"]);
    expect(tools.every((s) => s.status === "OK")).toBe(true);
  });
});
