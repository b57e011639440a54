// Imports every type module (each registers its types and root fields) and builds the schema.
import { builder } from "./builder.js";
import "./types/scalars.js";
import "./types/errors.js";
import "./types/workspace.js";

export const schema = builder.toSchema({ sortSchema: true });
