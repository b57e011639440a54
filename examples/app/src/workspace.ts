// The workspace the example asks its questions in: created on first use, remembered in
// localStorage, created again if the server no longer has it.
import { CreateWorkspaceDocument, type DossierClient, WorkspaceDocument } from "@dossier/sdk";

const KEY = "dossier-example:workspace";

let finding: Promise<string> | undefined;

/** One look-up per page, however often it is asked for (React's StrictMode runs effects twice). */
export function exampleWorkspace(dossier: DossierClient): Promise<string> {
  finding ??= findOrCreate(dossier).catch((error: unknown) => {
    finding = undefined;
    throw error;
  });
  return finding;
}

async function findOrCreate(dossier: DossierClient): Promise<string> {
  const remembered = localStorage.getItem(KEY);
  if (remembered && (await dossier.request(WorkspaceDocument, { id: remembered })).workspace) return remembered;
  const { createWorkspace: created } = await dossier.request(CreateWorkspaceDocument, {
    input: { title: "Example app", goal: "Answer the questions asked in the example app" },
  });
  if (created.__typename !== "CreateWorkspaceSuccess") throw new Error(created.message);
  localStorage.setItem(KEY, created.workspace.id);
  return created.workspace.id;
}
