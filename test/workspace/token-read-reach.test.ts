// A run an access token admitted reads with the token's reach: read_material asks it once per
// read — of the version's publication and of the one whose revocation broke it, together — so a
// read costs one look-up of the reach (its live workspaces, then the publications their histories
// hold) however it ends: read, unavailable with or without naming the version that broke it, or
// outside the reach. Workspace A's findings were built on B's private notes (linked only to B),
// which were then revoked. Pinned on both databases.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LinkToWorkspaceDocument, RevokePublicationVersionDocument } from "../../sdk/generated/graphql.js";
import { decodeGlobalId } from "../../src/domain/global-id.js";
import { DEVELOPMENT_PRINCIPAL_ID } from "../../src/domain/principal/principal-service.js";
import type { Transact, Tx } from "../../src/domain/transaction.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { createReadMaterialTool } from "../../src/runtime/workspace/material-tools.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { createWorkspace, expectType, publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { testRun, toolContext } from "../support/tool-context.js";

const SECRET_TITLE = "B's private notes";
const HOLD = "legal hold: merger talks with Acme";
/** The statements of one look-up of a reach: its live workspaces, then the publications their histories hold. */
const REACH = [/FROM "public"\."workspace"/, /^SELECT p\.id FROM publication p WHERE/];
const isReach = (sql: string) => REACH.some((pattern) => pattern.test(sql.trim()));

describe.each(backends)("read_material of a run an access token admitted, on %s", (backend) => {
  let t: TestApp;
  let tool: Tool;
  const statements: string[] = [];
  const ids = { a: "", b: "", findings: "", secret: "", plain: "" };
  const write: Transact = (work) => work({} as Tx, []);

  beforeAll(async () => {
    t = await startTestApp(backend, { database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }) });
    const client = t.client;
    const a = await createWorkspace(client, "A");
    const b = await createWorkspace(client, "B");
    const link = async (workspaceId: string, targetId: string) =>
      expectType((await client.request(LinkToWorkspaceDocument, { input: { workspaceId, targetId } })).linkToWorkspace, "LinkToWorkspaceSuccess");
    const secret = (await publish(client, { title: SECRET_TITLE, content: "B-PRIVATE-CONTENT" })).version.publication.id;
    await link(b.id, secret);
    const findings = (await publish(client, { title: "A's findings", content: "findings", sources: [{ publicationId: secret, version: 1 }] })).version
      .publication.id;
    await link(a.id, findings);
    const plain = (await publish(client, { title: "A's notes", content: "A-NOTES" })).version.publication.id;
    await link(a.id, plain);
    await client.request(RevokePublicationVersionDocument, { input: { publicationId: secret, version: 1, reason: HOLD } });
    Object.assign(ids, { a: a.id, b: b.id, findings, secret, plain });
    tool = createReadMaterialTool({ publications: t.app.services.publications, history: t.app.services.history, ledger: { record: async () => {} } });
  });
  afterAll(async () => t?.close());

  /** What a run of a token reading `workspaces` is told reading version 1 of `publicationId`, and the reach statements the read sent. */
  async function read(workspaces: string[], publicationId: string) {
    const run = testRun({
      ownerId: DEVELOPMENT_PRINCIPAL_ID,
      admittedByToken: "token-1",
      tokenReadableWorkspaceIds: workspaces.map((id) => decodeGlobalId(id)!.id),
    });
    const from = statements.length;
    const told = await tool.execute({ publicationId, version: 1 }, toolContext({ run, write }));
    return { told, reach: statements.slice(from).filter(isReach).length };
  }

  it("asks the reach once for a version broken by one outside it, and names that one only to a run reaching it", async () => {
    const unnamed = await read([ids.a], ids.findings);
    expect(unnamed.told).toContain("cannot be used: it rests on a version outside this token's reach, which was revoked.");
    expect(unnamed.told).not.toMatch(/B's private notes|legal hold/);
    expect(unnamed.reach).toBe(2);

    const named = await read([ids.a, ids.b], ids.findings);
    expect(named.told).toContain(`cannot be used: it depends on "${SECRET_TITLE}" version 1, which was revoked: ${HOLD}.`);
    expect(named.reach).toBe(2);
  });

  it("asks the reach once for a version it reads, and for one outside it", async () => {
    const available = await read([ids.a], ids.plain);
    expect(available.told).toContain("A-NOTES");
    expect(available.reach).toBe(2);

    const outside = await read([ids.a], ids.secret);
    expect(outside.told).toContain("there is no version 1 of that publication that you may read");
    expect(outside.reach).toBe(2);
  });
});
