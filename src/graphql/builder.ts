// The one SchemaBuilder. It defines no types: each file in ./types defines a type together
// with its root fields, and ./schema.ts imports them all.
import SchemaBuilder from "@pothos/core";
import { isObjectType } from "graphql";
import DataloaderPlugin from "@pothos/plugin-dataloader";
import ErrorsPlugin from "@pothos/plugin-errors";
import PrismaPlugin from "@pothos/plugin-prisma";
import RelayPlugin from "@pothos/plugin-relay";
import type PrismaTypes from "../generated/pothos-types.js";
import { getDatamodel } from "../generated/pothos-types.js";
import type { GraphQLContext } from "./context.js";
import { entityNodeLoader } from "./entity-nodes.js";
import { decodeGlobalId, encodeGlobalId } from "./global-id.js";
import { AccessGrantPlugin } from "./access-grants.js";
import { TextInputGuardPlugin } from "./text-input-guard.js";
import { UnavailablePayloadsPlugin } from "./unavailable-payloads.js";

export const builder = new SchemaBuilder<{
  PrismaTypes: PrismaTypes;
  Context: GraphQLContext;
  Scalars: { DateTime: { Input: Date; Output: Date | string }; JSON: { Input: unknown; Output: unknown }; Decimal: { Input: string; Output: string } };
  DefaultFieldNullability: false;
  DefaultEdgesNullability: { list: false; items: false };
  DefaultNodeNullability: false;
}>({
  defaultFieldNullability: false,
  // The text input guard runs inside ErrorsPlugin (so its ValidationError becomes a payload
  // member) and before every other plugin's wrapper and every resolver. Every mutation's payload
  // union holds ServiceUnavailableError, for a transient database failure anywhere inside
  // (unavailable-payloads.ts).
  // Fields that read the rows of a whole list together are `t.loadable` (DataloaderPlugin,
  // batched as request-batch.ts says).
  plugins: [ErrorsPlugin, UnavailablePayloadsPlugin, AccessGrantPlugin, TextInputGuardPlugin, PrismaPlugin, RelayPlugin, DataloaderPlugin],
  prisma: {
    client: (ctx) => ctx.prisma,
    dmmf: getDatamodel(),
    exposeDescriptions: true,
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
  relay: {
    clientMutationId: "omit",
    cursorType: "String",
    edgesFieldOptions: { nullable: { list: false, items: false } },
    nodeFieldOptions: { nullable: false },
    encodeGlobalID: encodeGlobalId,
    // An id that does not decode names no node: node(id) answers null rather than an error.
    decodeGlobalID: (globalId) => decodeGlobalId(globalId) ?? { typename: "", id: "" },
    nodesQueryOptions: false,
    nodeQueryOptions: {
      // Only ids of Node types (and of rows that read as one of several, see entity-nodes.ts) are
      // looked up; any other id names nothing.
      resolve: (_root, { id }, ctx, info, resolveNode) => {
        const loadEntity = entityNodeLoader(id.typename);
        if (loadEntity) return loadEntity(id.id, ctx);
        const type = info.schema.getType(id.typename);
        const isNode = isObjectType(type) && type.getInterfaces().some((iface) => iface.name === "Node");
        return isNode ? resolveNode(id) : null;
      },
    },
  },
});

builder.queryType({});
builder.mutationType({});
builder.subscriptionType({});
