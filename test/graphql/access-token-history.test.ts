// What a run an access token admitted sees of its workspace: no more than the token may READ. A
// token with ADMIT but not READ on a workspace admits runs there, but their context holds none of
// the workspace's title, checkpoint or history catalog, list_history and search_history show
// nothing of its history, and propose_checkpoint is refused — each says that the run may not read
// its workspace, and nothing of it (not even the checkpoint's revision). A token with READ and
// ADMIT, and the API key, see the workspace's history and propose checkpoints as before.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CreateAccessTokenDocument,
  CreateWorkspaceDocument,
  LinkToWorkspaceDocument,
  RunMaterialsDocument,
  UpdateCheckpointDocument,
  WorkspaceCheckpointDocument,
} from "../../sdk/generated/graphql.js";
import { decodeGlobalId } from "../../src/graphql/global-id.js";
import type { ChatMessage } from "../../src/runtime/ports/model.js";
import { backends } from "../support/databases.js";
import { admitUnread, expectType, publish } from "../support/fixtures.js";
import { asks } from "../support/requests.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const WORKSPACE_TITLE = "Cell chemistry WS-TITLE";
const GOAL = "Compare cathode suppliers WS-GOAL";
const CHECKPOINT = "Suppliers narrowed to two WS-CHECKPOINT";
const MATERIAL_TITLE = "Supplier audit WS-MATERIAL";
const MATERIAL = "The zephyrine membranes failed the heat test WS-SNIPPET";
const NEXT_STEP = "Ask supplier B for its heat test";
const UNREADABLE_CONTEXT =
  "This run may not read the workspace it was admitted in (the access token that admitted it has no READ there): its catalog and checkpoint are not shown, and it cannot propose a checkpoint.";
const UNREADABLE_HISTORY = "This run may not read its workspace (the access token that admitted it has no READ there), so its history cannot be shown.";
const UNREADABLE_PROPOSAL =
  "This run may not read its workspace (the access token that admitted it has no READ there), so it cannot propose a checkpoint: a proposal needs READ on the workspace.";

const text = (m: ChatMessage): string => (typeof m.content === "string" ? m.content : JSON.stringify(m.content));

describe.each(backends)("the history a run an access token admitted sees, on %s", (backend) => {
  let t: TestApp;
  let key: string;
  const model = toolCallingModel();
  const ids = { workspace: "", material: "" };
  const tokens = { admitOnly: "", readAndAdmit: "" };

  const mintToken = async (operations: ("READ" | "ADMIT")[]) =>
    expectType(
      (await t.as(key).request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: ids.workspace, operations }] } })).createAccessToken,
      "CreateAccessTokenSuccess",
    ).token;

  /** The workspace's checkpoint as the API key reads it: its revision and summary. */
  const checkpointNow = async () => {
    const node = (await t.as(key).request(WorkspaceCheckpointDocument, { workspaceId: ids.workspace })).node!;
    const workspace = expectType(node, "Workspace");
    return { revision: workspace.checkpointRevision, summary: expectType(workspace.checkpoint!, "Checkpoint").summary };
  };

  /** The run's checkpoint proposals as the API key reads them. */
  const proposalsOf = async (runId: string) =>
    (await t.as(key).request(RunMaterialsDocument, { id: runId })).run!.checkpointProposals.edges.map(({ node }) => ({
      status: node.status,
      reason: node.reason,
    }));

  /**
   * Admits, with `bearer`, a run that lists and searches its workspace's history and proposes a
   * checkpoint; returns its first model request's text, its answer, its trace and its id.
   */
  const historyRun = async (bearer: string, label: string) => {
    const question = callTools(
      { name: "list_history", id: `${label}-list` },
      { name: "search_history", arguments: { query: "zephyrine membranes" }, id: `${label}-search` },
      { name: "propose_checkpoint", arguments: { nextSteps: [NEXT_STEP] }, id: `${label}-propose` },
    );
    // A token without READ on the workspace is answered the run's id and status only.
    const { run } = await admitUnread(t.as(bearer), { workspaceId: ids.workspace, question });
    const done = await settled(t.as(key), run.id);
    expect(done.status).toBe("SUCCEEDED");
    const first = model.requests.find((request) => request.messages.some((m) => asks(m, question)))!;
    return { request: first.messages.map(text).join("\n"), answer: done.answer!, trace: JSON.stringify(done), runId: run.id };
  };

  beforeAll(async () => {
    t = await startTestApp(backend, {
      authRequired: true,
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-token-history-")) },
    });
    key = await t.createPrincipal("Team backend");
    const client = t.as(key);
    const workspace = expectType(
      (await client.request(CreateWorkspaceDocument, { input: { title: WORKSPACE_TITLE, goal: GOAL } })).createWorkspace,
      "CreateWorkspaceSuccess",
    ).workspace;
    const material = (await publish(client, { title: MATERIAL_TITLE, content: MATERIAL })).version.publication.id;
    expectType(
      (await client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: material } })).linkToWorkspace,
      "LinkToWorkspaceSuccess",
    );
    expectType(
      (await client.request(UpdateCheckpointDocument, { input: { workspaceId: workspace.id, expectedRevision: 0, summary: CHECKPOINT, questions: [] } }))
        .updateCheckpoint,
      "UpdateCheckpointSuccess",
    );
    Object.assign(ids, { workspace: workspace.id, material });
    tokens.admitOnly = await mintToken(["ADMIT"]);
    tokens.readAndAdmit = await mintToken(["READ", "ADMIT"]);
  });
  afterAll(async () => t?.close());

  it("a token with ADMIT but not READ: the run is told it may not read its workspace, its history tools show nothing and it proposes no checkpoint", async () => {
    const before = await checkpointNow();
    const { request, answer, trace, runId } = await historyRun(tokens.admitOnly, "admit-only");
    expect(request).toContain(UNREADABLE_CONTEXT);
    expect(request).not.toContain("no longer available");
    const materialId = decodeGlobalId(ids.material)!.id;
    const workspaceId = decodeGlobalId(ids.workspace)!.id;
    for (const seen of [request, answer, trace]) {
      for (const secret of [
        "WS-TITLE",
        "WS-GOAL",
        "WS-CHECKPOINT",
        "WS-MATERIAL",
        "WS-SNIPPET",
        "Checkpoint revision",
        "History catalog",
        `revision ${before.revision}`,
        ids.material,
        materialId,
        ids.workspace,
        workspaceId,
      ]) {
        expect(seen).not.toContain(secret);
      }
    }
    // Each tool says the run may not read its workspace; the proposal's answer names no revision.
    expect(answer).toBe([UNREADABLE_HISTORY, UNREADABLE_HISTORY, UNREADABLE_PROPOSAL].map((message) => `Error: ${message}`).join("\n---\n"));
    expect(answer).not.toContain("revision");
    // Nothing was proposed, so nothing was decided against the checkpoint, and it is as it was.
    expect(await proposalsOf(runId)).toEqual([]);
    expect(await checkpointNow()).toEqual(before);
  });

  it("a token with READ and ADMIT, and the API key: the run sees the workspace's title, checkpoint and history, and its proposal is applied, as before", async () => {
    for (const [label, bearer] of [
      ["read-and-admit", tokens.readAndAdmit],
      ["api-key", key],
    ] as const) {
      const before = await checkpointNow();
      const { request, answer, runId } = await historyRun(bearer, label);
      expect(request).toContain(`This run works in the research workspace "${WORKSPACE_TITLE}".`);
      expect(request).toContain(`Summary: ${CHECKPOINT}`);
      expect(request).toContain(`"${MATERIAL_TITLE}" publicationId=${ids.material}`);
      expect(request).toContain(`You may propose an updated checkpoint with propose_checkpoint; it is checked against revision ${before.revision}.`);
      const [listed, found, proposed] = answer.split("\n---\n");
      expect(listed).toContain(`"${MATERIAL_TITLE}" publicationId=${ids.material}`);
      expect(found).toContain(`"${MATERIAL_TITLE}" publicationId=${ids.material} version 1`);
      expect(found).toContain("«zephyrine» «membranes»");
      expect(proposed).toBe(
        `Proposal recorded. It will be applied when this run finishes successfully, if the checkpoint is still at revision ${before.revision}.`,
      );
      expect(await proposalsOf(runId)).toEqual([{ status: "ACCEPTED", reason: null }]);
      expect(await checkpointNow()).toEqual({ revision: before.revision + 1, summary: CHECKPOINT });
    }
  });
});
