// A2: an unexpected error — here a real database failure in the middle of a request — reaches the
// client as a generic error that tells nothing of the server (no message, no stack, no SQL),
// while the server's log keeps the original error with its stack for the operator.
import { afterEach, describe, expect, it } from "vitest";
import { DossierRequestError } from "../../sdk/client.js";
import { WorkspacesDocument } from "../../sdk/generated/graphql.js";
import { createLogger } from "../../src/logger.js";
import { backends } from "../support/databases.js";
import { createWorkspace } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("unexpected errors on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("are masked for the client and logged with their stack", async () => {
    const lines: string[] = [];
    t = await startTestApp(backend, { logger: createLogger("debug", (line) => lines.push(line)) });
    await createWorkspace(t.client);
    // The table goes away under the running app: the next read fails inside PostgreSQL.
    await t.app.db.prisma.$executeRawUnsafe('ALTER TABLE "workspace" RENAME TO "workspace_gone"');

    const error = await t.client.request(WorkspacesDocument, { first: 10 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DossierRequestError);
    const { errors } = error as DossierRequestError;
    expect(errors).toEqual([
      { message: "Unexpected error.", locations: [{ line: 2, column: 3 }], path: ["workspaces"], extensions: { code: "INTERNAL_SERVER_ERROR" } },
    ]);
    // Nothing of the failure itself: no database message, no table, no source, no stack.
    expect(JSON.stringify(errors)).not.toMatch(/workspace_gone|does not exist|prisma|findMany|\.ts|\bat /i);

    // The log has the original error: its message and the stack down to the resolver.
    const logged = lines.map((line) => JSON.parse(line) as { level: string; message: string; stack?: string }).filter((line) => line.level === "error");
    expect(logged).toHaveLength(1);
    expect(logged[0]!.message).toContain("The table `public.workspace` does not exist");
    expect(logged[0]!.stack).toMatch(/^PrismaClientKnownRequestError: [\s\S]*does not exist[\s\S]*\n\s+at /);

    await t.app.db.prisma.$executeRawUnsafe('ALTER TABLE "workspace_gone" RENAME TO "workspace"');
  });
});
