import { DateTimeResolver, JSONResolver } from "graphql-scalars";
import { builder } from "../builder.js";

builder.addScalarType("DateTime", DateTimeResolver);
builder.addScalarType("JSON", JSONResolver, { description: "Any JSON value: a tool call's arguments a person writes (decideToolCall with EDIT)." });
