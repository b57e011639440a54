// Every mutation with a payload union (@pothos/plugin-errors) answers a transient database failure
// with a ServiceUnavailableError member, added to its union here, never a masked internal error:
// a client can tell "try again later" from a bug. The answer says what the failure left behind,
// from what the mutation's work had committed (db/commit-ledger.ts): nothing, the change (only
// its answer failed), or an outcome nobody can know. Queries answer the same failure with a
// GraphQL error (server/unavailable-responses.ts), their result unions unchanged.
//
// It sits right after ErrorsPlugin in the builder's plugin list. Pothos composes plugins' hooks
// with reduceRight: this plugin's field config is seen before ErrorsPlugin builds the union from
// it, and its wrapper runs inside ErrorsPlugin's, so the error it throws becomes the payload
// member, and the database work of every plugin after it is covered too.
import SchemaBuilder, { BasePlugin, type PothosOutputFieldConfig, type SchemaTypes } from "@pothos/core";
import type { GraphQLFieldResolver } from "graphql";
import { trackingCommits } from "../db/commit-ledger.js";
import { ServiceUnavailableError } from "../domain/errors.js";
import type { Logger } from "../logger.js";
import { unavailableFor, unavailableMessage } from "./transient-failures.js";

/** The plugin's name, for the builder's `plugins` list. */
export const UnavailablePayloadsPlugin = "unavailablePayloads" as const;

declare global {
  export namespace PothosSchemaTypes {
    export interface Plugins<Types extends SchemaTypes> {
      unavailablePayloads: PothosUnavailablePayloadsPlugin<Types>;
    }
  }
}

type Resolver<Types extends SchemaTypes> = GraphQLFieldResolver<unknown, Types["Context"], object>;

type ErrorsOption = { types?: unknown[] } | undefined;

export class PothosUnavailablePayloadsPlugin<Types extends SchemaTypes> extends BasePlugin<Types> {
  override onOutputFieldConfig(fieldConfig: PothosOutputFieldConfig<Types>): PothosOutputFieldConfig<Types> {
    const errors = (fieldConfig.pothosOptions as { errors?: ErrorsOption }).errors;
    if (fieldConfig.kind !== "Mutation" || !errors || errors.types?.includes(ServiceUnavailableError)) return fieldConfig;
    const withUnavailable = { ...errors, types: [...(errors.types ?? []), ServiceUnavailableError] };
    return { ...fieldConfig, pothosOptions: { ...fieldConfig.pothosOptions, errors: withUnavailable } as typeof fieldConfig.pothosOptions };
  }

  override wrapResolve(resolver: Resolver<Types>, fieldConfig: PothosOutputFieldConfig<Types>): Resolver<Types> {
    // pothosErrors is what ErrorsPlugin catches for this field (its union's error types).
    const errorTypes = fieldConfig.extensions?.["pothosErrors"];
    if (fieldConfig.kind !== "Mutation" || !Array.isArray(errorTypes) || !errorTypes.includes(ServiceUnavailableError)) return resolver;
    return async (source, args, context, info) => {
      const { ledger, done } = trackingCommits(async () => resolver(source, args, context, info));
      try {
        return await done;
      } catch (error) {
        throw unavailableFor(error, (context as { logger: Logger }).logger, () => unavailableMessage(ledger));
      }
    };
  }
}

SchemaBuilder.registerPlugin(UnavailablePayloadsPlugin, PothosUnavailablePayloadsPlugin);
