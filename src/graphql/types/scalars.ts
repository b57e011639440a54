import { DateTimeResolver, JSONResolver } from "graphql-scalars";
import { builder } from "../builder.js";

builder.addScalarType("DateTime", DateTimeResolver);
// Any JSON value; the fields that take or give one say which shape they hold (e.g. Run.metadata).
builder.addScalarType("JSON", JSONResolver);
