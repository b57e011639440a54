// A3/A4: the committed SDL and the SDK generated from it match the code. When this fails,
// run `npm run generate` and commit the result. The migrations hold every change of
// prisma/schema.prisma, computed by the same CLI that authors them (`npm run migration:new`).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { generate } from "@graphql-codegen/cli";
import { type DocumentNode, print } from "graphql";
import { describe, expect, it } from "vitest";
import * as sdk from "../sdk/generated/graphql.js";
import codegenConfig from "../codegen.js";
import { printSortedSchema } from "../src/graphql/print-schema.js";
import { projectRoot } from "./support/processes.js";

describe("generated artifacts", () => {
  it("schema/schema.graphql is the sorted SDL of the code-first schema", () => {
    const committed = readFileSync(`${projectRoot}/schema/schema.graphql`, "utf8");
    expect(printSortedSchema(), "schema/schema.graphql is stale: run `npm run generate`").toBe(committed);
  });

  it("sdk/generated (the typed documents and the persisted-documents manifest) is what codegen produces from the committed SDL", async () => {
    const outputs = (await generate({ ...codegenConfig, cwd: projectRoot, silent: true }, false)) as { filename: string; content: string }[];
    expect(outputs.map((output) => output.filename).sort()).toEqual(["sdk/generated/graphql.ts", "sdk/generated/persisted-documents.json"]);
    for (const output of outputs) {
      const committed = readFileSync(`${projectRoot}/${output.filename}`, "utf8");
      expect(output.content, `${output.filename} is stale: run \`npm run generate\``).toBe(committed);
    }
  });

  it("the manifest holds exactly the text the SDK sends for each of its documents, under its sha256 documentId", () => {
    const manifest = JSON.parse(readFileSync(`${projectRoot}/sdk/generated/persisted-documents.json`, "utf8")) as Record<string, string>;
    const documents = Object.entries(sdk).filter(([name]) => name.endsWith("Document"));
    expect(documents.length).toBeGreaterThan(60);
    const sent = Object.fromEntries(
      documents.map(([, document]) => {
        const text = print(document as DocumentNode);
        return [`sha256:${createHash("sha256").update(text).digest("hex")}`, text];
      }),
    );
    expect(manifest).toEqual(sent);
  });

  it("prisma/migrations holds every change of prisma/schema.prisma", () => {
    const run = () =>
      execFileSync(process.execPath, ["--import", "tsx", "scripts/new-migration.ts", "--check"], { cwd: projectRoot, encoding: "utf8", stdio: "pipe" });
    expect(run()).toMatch(/matches the migrations: nothing to write/);
    // The diff replays every migration into an embedded database: about a minute on a busy machine.
  }, 300_000);
});
