// Relay global ids are part of the product's identity of objects, shared with the runtime
// (the model names materials by them); they live in the domain layer.
export * from "../domain/global-id.js";
