// Writes sdk/generated/graphql.ts, the SDK's typed documents, from the committed SDL and the
// operations in sdk/operations (npm run generate:sdk). It calls graphql-codegen's core with the
// plugins codegen.ts names, reading the files itself: the codegen CLI's file, URL and GitHub
// loaders, its task runner and their dependencies would be installed for this alone, and several
// of them require Node.js 22.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { codegen } from "@graphql-codegen/core";
import type { Types } from "@graphql-codegen/plugin-helpers";
import { buildSchema, parse } from "graphql";
import { PLUGINS, SDK_CODEGEN } from "../codegen.js";

const root = fileURLToPath(new URL("..", import.meta.url));

/** The operation files, in path order, each parsed as the CLI's loader would. */
function operationDocuments(): Types.DocumentFile[] {
  const folder = path.join(root, SDK_CODEGEN.documents);
  return readdirSync(folder, { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".graphql"))
    .sort()
    .map((name) => {
      const location = path.join(folder, name);
      return { location, document: parse(readFileSync(location, "utf8")) };
    });
}

/** The generated file's text. */
export async function generateSdk(): Promise<string> {
  const sdl = readFileSync(path.join(root, SDK_CODEGEN.schema), "utf8");
  return codegen({
    filename: SDK_CODEGEN.output,
    schema: parse(sdl),
    schemaAst: buildSchema(sdl),
    documents: operationDocuments(),
    plugins: SDK_CODEGEN.plugins,
    pluginMap: PLUGINS,
    config: SDK_CODEGEN.config,
    emitLegacyCommonJSImports: false,
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  writeFileSync(path.join(root, SDK_CODEGEN.output), await generateSdk());
  console.log(`wrote ${SDK_CODEGEN.output}`);
}
