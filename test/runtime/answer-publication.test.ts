// A model's answer is output, not input: the rules a publication's content follows (something
// visible, at most 1,000,000 characters) are for text people write. An answer that breaks them
// is still the run's answer and the run SUCCEEDS; what was published, or why nothing was, is on
// the run (publicationOutcome, publicationSkippedReason).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { questionOf } from "../support/requests.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const ANSWERS: Record<string, string> = {
  plain: "Capacity grows to 1.2 TWh.",
  invisible: "\u200B\u200B\u200B",
  long: "x".repeat(1_200_000),
  blank: "   ",
};

/** Answers each question with the answer its name picks. */
const answeringModel = () =>
  new ScriptedModel({
    name: "answers",
    recordRequests: false,
    steps: (request) => ({ content: ANSWERS[questionOf(String(request.messages.findLast((m) => m.role === "user")?.content))] ?? "?" }),
  });

describe.each(backends)("publishing a run's answer on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("an answer without visible characters or over the limit is recorded, the run SUCCEEDS, and the run says why nothing was published", {
    timeout: 120_000,
  }, async () => {
    t = await startTestApp(backend, { runtime: { model: answeringModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-answers-")) } });
    const workspace = await createWorkspace(t.client);
    const runs = Object.fromEntries(
      await Promise.all(
        Object.keys(ANSWERS).map(async (name) => [name, (await admit(t!.client, { workspaceId: workspace.id, question: name })).run.id] as const),
      ),
    );
    const outside = (await admit(t.client, { question: "plain" })).run.id;
    const seen = Object.fromEntries(await Promise.all(Object.entries(runs).map(async ([name, id]) => [name, await settled(t!.client, id, 60_000)] as const)));
    for (const run of Object.values(seen)) expect(run.status).toBe("SUCCEEDED");
    expect(seen.plain!.publicationOutcome).toBe("PUBLISHED");
    expect(seen.plain!.publicationSkippedReason).toBeNull();
    expect(seen.invisible!.answer).toBe(ANSWERS.invisible);
    expect(seen.invisible!.publicationOutcome).toBe("NO_VISIBLE_CHARACTERS");
    expect(seen.invisible!.publicationSkippedReason).toBe("the answer has no visible character");
    expect(seen.long!.answer).toHaveLength(1_200_000);
    expect(seen.long!.publicationOutcome).toBe("TOO_LONG");
    expect(seen.long!.publicationSkippedReason).toContain("1,000,000 characters");
    expect(seen.blank!.publicationOutcome).toBe("EMPTY_ANSWER");
    const elsewhere = await settled(t.client, outside);
    expect([elsewhere.status, elsewhere.publicationOutcome]).toEqual(["SUCCEEDED", "NO_WORKSPACE"]);
  });
});
