// Queries and mutations run as code compiled once per document (graphql-jit) instead of being
// interpreted field by field on every request: a document's plan — which resolvers to call, how
// to coerce its variables, how to complete each type — is built when it is first seen and reused.
// Yoga's parse and validation caches already hand back the same document object for the same
// text, so the compiled plan is found by identity. Subscriptions keep graphql-js's executor:
// their events are few per request and their iterators are shared across subscribers
// (server/shared-subscription-results.ts).
import { useGraphQlJit } from "@envelop/graphql-jit";
import { Kind, type OperationDefinitionNode } from "graphql";
import type { Plugin } from "graphql-yoga";

export function useCompiledExecution(): Plugin {
  return useGraphQlJit({}, {
    enableIf: ({ document, operationName }) => operationOf(document.definitions, operationName)?.operation !== "subscription",
  }) as Plugin;
}

function operationOf(definitions: readonly { kind: Kind }[], name: string | null | undefined): OperationDefinitionNode | undefined {
  for (const definition of definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const operation = definition as OperationDefinitionNode;
    if (!name || operation.name?.value === name) return operation;
  }
  return undefined;
}
