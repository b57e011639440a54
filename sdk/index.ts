export * from "./client.js";
export * from "./webhooks.js";
export * from "./generated/graphql.js";
