// R13: skills on demand. The model context carries only names and descriptions (in load_skill's
// description); load_skill returns a body in its own SKILL_LOAD span; a stored skill overrides a
// built-in one of the same name from the next run on.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DeleteSkillDocument, UpsertSkillDocument } from "../../sdk/generated/graphql.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { parseSkillFile, SkillCatalog } from "../../src/runtime/skills/skill-catalog.js";
import type { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { admit, expectType } from "../support/fixtures.js";
import { callTools, callToolsInTurns, settled, spanStarted, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const pause: Tool = {
  schema: { name: "pause", description: "waits", parameters: { type: "object" } },
  execute: (args) => new Promise((resolve) => setTimeout(() => resolve("paused"), (args as { ms: number }).ms)),
};

describe("skills", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function start(): Promise<{ t: TestApp; model: ScriptedModel }> {
    const model = toolCallingModel("skills");
    t = await startTestApp("pglite", {
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")), extraTools: [pause] },
    });
    return { t, model };
  }

  const loadSkillSchema = (model: ScriptedModel) => model.requests.at(-1)!.tools.find((tool) => tool.name === "load_skill")!;

  it("ships useful built-in skills, each a Markdown file with a name and a description", async () => {
    const skills = await new SkillCatalog({ skills: undefined as never }).builtInSkills();
    expect(skills.map((s) => s.name)).toEqual(["research-checkpoint", "source-evaluation", "spilled-results", "stuck-payment"]);
    for (const skill of skills) expect(skill.body.length).toBeGreaterThan(500);
    expect(() => parseSkillFile("x.md", "no front matter")).toThrow(/front matter/);
    expect(() => parseSkillFile("x.md", "---\nname: Bad Name\ndescription: d\n---\nbody")).toThrow(/kebab-case/);
  });

  it("lists only names and descriptions in the context and loads a body in a SKILL_LOAD span", async () => {
    const { t, model } = await start();
    const { run } = await admit(t.client, { question: callTools({ name: "load_skill", arguments: { name: "stuck-payment" } }) });
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toContain("# Investigating a stuck payment");

    const schema = loadSkillSchema(model);
    expect(schema.description).toContain("- stuck-payment: Investigate a payment that is stuck");
    expect(schema.description).toContain("- research-checkpoint: ");
    expect(JSON.stringify(model.requests[0])).not.toContain("# Investigating a stuck payment");

    const skillSpan = done.trace!.spans.find((span) => span.kind === "SKILL_LOAD")!;
    expect(skillSpan).toMatchObject({ name: "load_skill stuck-payment", status: "OK" });
    expect(JSON.parse(skillSpan.attributes)).toMatchObject({ "skill.name": "stuck-payment", "skill.source": "BUILT_IN" });
    expect(done.trace!.spans.find((span) => span.id === skillSpan.parentId)!.kind).toBe("TOOL_CALL");
  });

  it("tells the model which skills exist when it asks for an unknown one", async () => {
    const { t } = await start();
    const { run } = await admit(t.client, { question: callTools({ name: "load_skill", arguments: { name: "nope" } }) });
    expect((await settled(t.client, run.id)).answer).toMatch(/^Error: There is no skill named "nope"\. Available: research-checkpoint, /);
  });

  it("uses a stored skill instead of the built-in one of the same name from the next run on, and the built-in again after deleteSkill", async () => {
    const { t, model } = await start();
    const load = { name: "load_skill", arguments: { name: "research-checkpoint" } };

    // A run in flight keeps the skills it started with, even when one changes meanwhile.
    const { run: inFlight } = await admit(t.client, { question: callToolsInTurns([{ name: "pause", arguments: { ms: 600 } }], [load]) });
    await spanStarted(t.client, inFlight.id, "TOOL_CALL");
    const upserted = await t.client.request(UpsertSkillDocument, {
      input: { name: "research-checkpoint", description: "Our team's checkpoint format.", body: "# Team checkpoint\nThree bullet points, no more." },
    });
    expect(expectType(upserted.upsertSkill, "UpsertSkillSuccess").skill).toMatchObject({ source: "DATABASE", overridesBuiltIn: true, agent: "researcher" });
    const old = await settled(t.client, inFlight.id);
    expect(old.answer).toContain("# Writing a research checkpoint");
    expect(old.answer).not.toContain("Team checkpoint");

    const { run: next } = await admit(t.client, { question: callTools(load) });
    const overridden = await settled(t.client, next.id);
    expect(overridden.answer).toBe("# Team checkpoint\nThree bullet points, no more.");
    expect(loadSkillSchema(model).description).toContain("- research-checkpoint: Our team's checkpoint format.");
    const span = overridden.trace!.spans.find((s) => s.kind === "SKILL_LOAD")!;
    expect(JSON.parse(span.attributes)["skill.source"]).toBe("DATABASE");

    const deleted = await t.client.request(DeleteSkillDocument, { input: { name: "research-checkpoint" } });
    expect(expectType(deleted.deleteSkill, "DeleteSkillSuccess").builtIn?.source).toBe("BUILT_IN");
    const { run: after } = await admit(t.client, { question: callTools(load) });
    expect((await settled(t.client, after.id)).answer).toContain("# Writing a research checkpoint");
  });

  it("offers a principal's stored skills to that principal's runs only", async () => {
    const { t, model } = await start();
    await t.client.request(UpsertSkillDocument, { input: { name: "house-style", description: "How we write.", body: "Short sentences." } });
    const other = t.as(await t.createPrincipal("Other"));
    const { run } = await admit(other, { question: callTools({ name: "load_skill", arguments: { name: "house-style" } }) });
    expect((await settled(other, run.id)).answer).toMatch(/^Error: There is no skill named "house-style"/);
    expect(loadSkillSchema(model).description).not.toContain("house-style");
  });
});
