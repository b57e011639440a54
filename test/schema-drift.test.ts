// A3/A4: the committed SDL and the SDK generated from it match the code. When this fails,
// run `npm run generate` and commit the result. The migrations hold every change of
// prisma/schema.prisma, computed by the same CLI that authors them (`npm run migration:new`).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { generate } from "@graphql-codegen/cli";
import { describe, expect, it } from "vitest";
import codegenConfig from "../codegen.js";
import { printSortedSchema } from "../src/graphql/print-schema.js";
import { projectRoot } from "./support/processes.js";

describe("generated artifacts", () => {
  it("schema/schema.graphql is the sorted SDL of the code-first schema", () => {
    const committed = readFileSync(`${projectRoot}/schema/schema.graphql`, "utf8");
    expect(printSortedSchema(), "schema/schema.graphql is stale: run `npm run generate`").toBe(committed);
  });

  it("sdk/generated/graphql.ts is what codegen produces from the committed SDL", async () => {
    const outputs = await generate({ ...codegenConfig, cwd: projectRoot, silent: true }, false);
    const [output] = outputs as { filename: string; content: string }[];
    const committed = readFileSync(`${projectRoot}/sdk/generated/graphql.ts`, "utf8");
    expect(output?.content, "sdk/generated is stale: run `npm run generate`").toBe(committed);
  });

  it("prisma/migrations holds every change of prisma/schema.prisma", () => {
    const run = () =>
      execFileSync(process.execPath, ["--import", "tsx", "scripts/new-migration.ts", "--check"], { cwd: projectRoot, encoding: "utf8", stdio: "pipe" });
    expect(run()).toMatch(/matches the migrations: nothing to write/);
    // The diff replays every migration into an embedded database: about a minute on a busy machine.
  }, 300_000);
});
