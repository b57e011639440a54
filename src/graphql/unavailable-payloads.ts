// Every mutation with a payload union (@pothos/plugin-errors) answers a transient database failure
// with a ServiceUnavailableError member, added to its union here, never a masked internal error:
// a client can tell "try again later" from a bug. The answer does not claim what the failure left
// behind: telling "nothing was changed" from "committed" would mean following every statement to
// the mutation that sent it (AsyncLocalStorage), and on Node.js 20 that puts a hook on every
// promise of the process (measured: twice the CPU of a promise-heavy loop), so the client is told
// to read the object before repeating the request. Queries answer the same failure with a
// GraphQL error (server/unavailable-responses.ts), their result unions unchanged.
//
// It sits right after ErrorsPlugin in the builder's plugin list. Pothos composes plugins' hooks
// with reduceRight: this plugin's field config is seen before ErrorsPlugin builds the union from
// it, and its wrapper runs inside ErrorsPlugin's, so the error it throws becomes the payload
// member, and the database work of every plugin after it is covered too.
import SchemaBuilder, { BasePlugin, type PothosOutputFieldConfig, type SchemaTypes } from "@pothos/core";
import type { GraphQLFieldResolver } from "graphql";
import { ServiceUnavailableError } from "../domain/errors.js";
import type { Logger } from "../logger.js";
import { NOT_CONFIRMED, unavailableFor } from "./transient-failures.js";

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
      try {
        return await resolver(source, args, context, info);
      } catch (error) {
        throw unavailableFor(error, (context as { logger: Logger }).logger, () => NOT_CONFIRMED);
      }
    };
  }
}

SchemaBuilder.registerPlugin(UnavailablePayloadsPlugin, PothosUnavailablePayloadsPlugin);
