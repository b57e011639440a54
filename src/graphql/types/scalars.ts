import { DateTimeResolver } from "graphql-scalars";
import { builder } from "../builder.js";

builder.addScalarType("DateTime", DateTimeResolver);
