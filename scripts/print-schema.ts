// Writes the sorted SDL to schema/schema.graphql (npm run generate:schema).
import { mkdirSync, writeFileSync } from "node:fs";
import { printSortedSchema } from "../src/graphql/print-schema.js";

mkdirSync("schema", { recursive: true });
writeFileSync("schema/schema.graphql", printSortedSchema());
console.log("wrote schema/schema.graphql");
