// A1: checkpoint revisions, ledger entries and skills are Relay nodes. node(id) reads them for
// their owner and answers null for anyone else, exactly as for an id that names nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import {
  CheckpointVersionNodeDocument,
  DeleteSkillDocument,
  MaterialUseNodeDocument,
  RevokePublicationVersionDocument,
  SkillNodeDocument,
  SkillsDocument,
  UpdateCheckpointDocument,
  UpsertSkillDocument,
  WorkspaceCheckpointDocument,
} from "../../sdk/generated/graphql.js";
import { encodeGlobalId, idOfType } from "../../src/graphql/global-id.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish, startConversation } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const dbId = (globalId: string, typename: string) => idOfType(globalId, typename)!;

describe.each(backends)("checkpoint revisions, ledger entries and skills as nodes on %s", (backend) => {
  let t: TestApp;
  let alice: DossierClient;
  let bob: DossierClient;

  beforeAll(async () => {
    t = await startTestApp(backend, { authRequired: true });
    alice = t.as(await t.createPrincipal("Alice"));
    bob = t.as(await t.createPrincipal("Bob"));
  });
  afterAll(async () => t?.close());

  it("reads a checkpoint revision by its id, under the same id once it has become unavailable", async () => {
    const workspace = await createWorkspace(alice);
    const source = await publish(alice, { title: "Cell prices", content: "Cells cost 90 EUR/kWh." });
    const updated = await alice.request(UpdateCheckpointDocument, {
      input: { workspaceId: workspace.id, expectedRevision: 0, summary: "Prices found.", questions: [{ text: "Which plants slip?" }] },
    });
    const first = expectType(updated.updateCheckpoint, "UpdateCheckpointSuccess").checkpoint;
    // A model's revision resting on the published version, as an accepted proposal writes it.
    const second = await t.app.db.prisma.checkpointVersion.create({
      data: {
        workspaceId: dbId(workspace.id, "Workspace"),
        revision: 2,
        summary: "Cells cost 90 EUR/kWh.",
        nextSteps: [],
        questions: [],
        origin: "MODEL_SUGGESTION",
        authorId: "model",
        sourceVersionIds: [dbId(source.version.id, "PublicationVersion")],
        // Its summary rests on that version (availability is decided section by section).
        sections: {
          summary: { author: { kind: "OWNER", principalId: "model" }, sourceVersionIds: [dbId(source.version.id, "PublicationVersion")] },
          nextSteps: null,
          questions: {},
        },
      },
    });
    const secondId = encodeGlobalId("CheckpointVersion", second.id);

    expect((await alice.request(CheckpointVersionNodeDocument, { id: first.id })).node).toMatchObject({
      __typename: "Checkpoint",
      id: first.id,
      revision: 1,
      summary: "Prices found.",
      questions: [{ text: "Which plants slip?", status: "OPEN" }],
    });
    expect((await alice.request(CheckpointVersionNodeDocument, { id: secondId })).node).toMatchObject({ __typename: "Checkpoint", revision: 2 });

    expectType(
      (await alice.request(RevokePublicationVersionDocument, { input: { publicationId: source.version.publication.id, version: 1, reason: "withdrawn" } }))
        .revokePublicationVersion,
      "RevokePublicationVersionSuccess",
    );
    const withheld = (await alice.request(CheckpointVersionNodeDocument, { id: secondId })).node;
    expect(withheld).toMatchObject({ __typename: "UnavailableCheckpoint", id: secondId, revision: 2, unavailableSource: { id: source.version.id } });
    expect(JSON.stringify(withheld)).not.toContain("90 EUR");
    // The workspace's own list names the revisions by the same ids.
    const listed = expectType((await alice.request(WorkspaceCheckpointDocument, { workspaceId: workspace.id })).node!, "Workspace");
    expect(listed.checkpointVersions.map((v) => [v.__typename, v.id])).toEqual([
      ["UnavailableCheckpoint", secondId],
      ["Checkpoint", first.id],
    ]);

    for (const id of [first.id, secondId]) expect((await bob.request(CheckpointVersionNodeDocument, { id })).node).toBeNull();
    expect((await alice.request(CheckpointVersionNodeDocument, { id: encodeGlobalId("CheckpointVersion", "nothing") })).node).toBeNull();
  });

  it("reads a ledger entry by its id for the owner of its run only", async () => {
    const workspace = await createWorkspace(alice);
    const conversation = await startConversation(alice);
    const material = await publish(alice, { title: "Plant list", content: "Plant X slips to 2028." });
    const run = (await admit(alice, { workspaceId: workspace.id, conversationId: conversation.id, question: "Which plants slip?" })).run;
    const use = await t.app.db.prisma.materialUse.create({
      data: {
        runId: dbId(run.id, "Run"),
        publicationId: dbId(material.version.publication.id, "Publication"),
        version: 1,
        publicationVersionId: dbId(material.version.id, "PublicationVersion"),
        stage: "SELECTED",
      },
    });
    const id = encodeGlobalId("MaterialUse", use.id);

    expect((await alice.request(MaterialUseNodeDocument, { id })).node).toMatchObject({
      __typename: "MaterialUse",
      id,
      stage: "SELECTED",
      version: 1,
      publicationVersion: { id: material.version.id },
      run: { id: run.id },
    });
    expect((await bob.request(MaterialUseNodeDocument, { id })).node).toBeNull();
  });

  it("reads a stored skill by its id for its owner only, and a built-in skill for everyone", async () => {
    const upserted = await alice.request(UpsertSkillDocument, {
      input: { name: "price-check", description: "Checks cell prices.", body: "Compare two suppliers." },
    });
    const stored = expectType(upserted.upsertSkill, "UpsertSkillSuccess").skill;
    expect((await alice.request(SkillNodeDocument, { id: stored.id })).node).toMatchObject({
      __typename: "Skill",
      id: stored.id,
      name: "price-check",
      body: "Compare two suppliers.",
      source: "DATABASE",
      agent: "researcher",
    });
    expect((await bob.request(SkillNodeDocument, { id: stored.id })).node).toBeNull();

    // A built-in skill is the same for every principal; overriding it gives the override its own id.
    const builtIn = (await bob.request(SkillsDocument, { agent: "researcher" })).skills.find((s) => s.source === "BUILT_IN")!;
    const override = expectType(
      (await alice.request(UpsertSkillDocument, { input: { name: builtIn.name, description: "Mine.", body: "My way." } })).upsertSkill,
      "UpsertSkillSuccess",
    ).skill;
    expect(override.id).not.toBe(builtIn.id);
    for (const client of [alice, bob]) {
      expect((await client.request(SkillNodeDocument, { id: builtIn.id })).node).toMatchObject({
        __typename: "Skill",
        id: builtIn.id,
        name: builtIn.name,
        body: builtIn.body,
        source: "BUILT_IN",
      });
    }
    expect((await alice.request(SkillNodeDocument, { id: override.id })).node).toMatchObject({ source: "DATABASE", overridesBuiltIn: true, body: "My way." });

    expectType((await alice.request(DeleteSkillDocument, { input: { name: "price-check" } })).deleteSkill, "DeleteSkillSuccess");
    expect((await alice.request(SkillNodeDocument, { id: stored.id })).node).toBeNull();
  });
});
