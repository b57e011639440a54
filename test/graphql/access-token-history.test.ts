// What a run an access token admitted sees of its workspace: no more than the token may READ. A
// token with ADMIT but not READ on a workspace admits runs there, but their context holds none of
// the workspace's title, checkpoint or history catalog, and list_history and search_history show
// nothing of its history — the run is told what a run is told of a workspace that no longer
// exists. A token with READ and ADMIT, and the API key, see the workspace's history as before.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AdmitRunDocument,
  CreateAccessTokenDocument,
  CreateWorkspaceDocument,
  LinkToWorkspaceDocument,
  UpdateCheckpointDocument,
} from "../../sdk/generated/graphql.js";
import { decodeGlobalId } from "../../src/graphql/global-id.js";
import type { ChatMessage } from "../../src/runtime/ports/model.js";
import { backends } from "../support/databases.js";
import { expectType, publish } from "../support/fixtures.js";
import { asks } from "../support/requests.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const WORKSPACE_TITLE = "Cell chemistry WS-TITLE";
const GOAL = "Compare cathode suppliers WS-GOAL";
const CHECKPOINT = "Suppliers narrowed to two WS-CHECKPOINT";
const MATERIAL_TITLE = "Supplier audit WS-MATERIAL";
const MATERIAL = "The zephyrine membranes failed the heat test WS-SNIPPET";
const GONE = "The workspace of this run is no longer available, so its history cannot be shown.";

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

  /** Admits, with `bearer`, a run that lists and searches its workspace's history; returns its first model request's text, its answer and its trace. */
  const historyRun = async (bearer: string, label: string) => {
    const question = callTools(
      { name: "list_history", id: `${label}-list` },
      { name: "search_history", arguments: { query: "zephyrine membranes" }, id: `${label}-search` },
    );
    const { run } = expectType((await t.as(bearer).request(AdmitRunDocument, { input: { workspaceId: ids.workspace, question } })).admitRun, "AdmitRunSuccess");
    const done = await settled(t.as(key), run.id);
    expect(done.status).toBe("SUCCEEDED");
    const first = model.requests.find((request) => request.messages.some((m) => asks(m, question)))!;
    return { request: first.messages.map(text).join("\n"), answer: done.answer!, trace: JSON.stringify(done) };
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

  it("a token with ADMIT but not READ: the run's context, list_history and search_history hold nothing of the workspace", async () => {
    const { request, answer, trace } = await historyRun(tokens.admitOnly, "admit-only");
    expect(request).toContain("The workspace this run was admitted in is no longer available; its catalog and checkpoint cannot be shown.");
    const materialId = decodeGlobalId(ids.material)!.id;
    for (const seen of [request, answer, trace]) {
      for (const secret of [
        "WS-TITLE",
        "WS-GOAL",
        "WS-CHECKPOINT",
        "WS-MATERIAL",
        "WS-SNIPPET",
        "Checkpoint revision",
        "History catalog",
        ids.material,
        materialId,
      ]) {
        expect(seen).not.toContain(secret);
      }
    }
    // Both tools answer as for a workspace that no longer exists.
    expect(answer).toBe([GONE, GONE].map((message) => `Error: ${message}`).join("\n---\n"));
  });

  it("a token with READ and ADMIT, and the API key: the run sees the workspace's title, checkpoint and history as before", async () => {
    for (const [label, bearer] of [
      ["read-and-admit", tokens.readAndAdmit],
      ["api-key", key],
    ] as const) {
      const { request, answer } = await historyRun(bearer, label);
      expect(request).toContain(`This run works in the research workspace "${WORKSPACE_TITLE}".`);
      expect(request).toContain(`Summary: ${CHECKPOINT}`);
      expect(request).toContain(`"${MATERIAL_TITLE}" publicationId=${ids.material}`);
      const [listed, found] = answer.split("\n---\n");
      expect(listed).toContain(`"${MATERIAL_TITLE}" publicationId=${ids.material}`);
      expect(found).toContain(`"${MATERIAL_TITLE}" publicationId=${ids.material} version 1`);
      expect(found).toContain("«zephyrine» «membranes»");
    }
  });
});
