// Codegen plugin (npm run generate:sdk): the SDK's persisted-documents manifest, documentId →
// document, for every operation in sdk/operations. Each document is exactly the text the SDK
// sends: codegen's own typed-document-node plugin builds the SDK's documents (the operation and
// the fragments it uses), and each is printed with graphql's `print`, as sdk/client.ts does. Its
// id is a SHA256 hex document identifier of the GraphQL-over-HTTP persisted-documents appendix:
// "sha256:" and the lower-case hex SHA-256 of that text's UTF-8 bytes.
import { createHash } from "node:crypto";
import { plugin as typedDocumentNode } from "@graphql-codegen/typed-document-node";
import { Kind, print } from "graphql";

/** The id the SDK sends for a document text. */
export const documentIdOf = (text) => `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;

export async function plugin(schema, documents, config, info) {
  const output = await typedDocumentNode(schema, documents, config, info);
  const content = typeof output === "string" ? output : output.content;
  const manifest = {};
  for (const [, json] of content.matchAll(/^export const \w+Document = (\{.*\}) as unknown as DocumentNode<.*>;$/gm)) {
    const text = print(JSON.parse(json));
    manifest[documentIdOf(text)] = text;
  }
  const operations = documents.flatMap(({ document }) => document?.definitions ?? []).filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  if (Object.keys(manifest).length !== operations.length) {
    throw new Error(`persisted documents: ${Object.keys(manifest).length} documents for ${operations.length} operations`);
  }
  return `${JSON.stringify(manifest, null, 2)}\n`;
}
