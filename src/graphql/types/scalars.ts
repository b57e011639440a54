import { DateTimeResolver, JSONResolver } from "graphql-scalars";
import { builder } from "../builder.js";

builder.addScalarType("DateTime", DateTimeResolver);
// Any JSON value; the fields that take or give one say which shape they hold (Run.metadata, the
// edited arguments of decideToolCall with EDIT).
builder.addScalarType("JSON", JSONResolver, { description: "Any JSON value; the field that takes or gives one says which shape it holds." });
