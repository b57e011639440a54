export * from "./client.js";
export * from "./generated/graphql.js";
