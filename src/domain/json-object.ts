// A JSON object as parsed JSON gives it: not null, not a list. What a model, a tool or an MCP server
// sends is read field by field through this, never assumed to have the shape it should.

/** Whether a parsed JSON value is an object (not null, not a list). */
export const isJsonObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
