export * from "./client.js";
export * from "./readable-arguments.js";
export * from "./run-store.js";
export * from "./visible-text.js";
export * from "./webhooks.js";
export * from "./workspace-runs.js";
export * from "./generated/graphql.js";
