-- Which MCP tool an approval request is for, "<server>/<tool as its server lists it>": the name
-- the model sees is fitted to model APIs and may come to mean another tool once the server's list
-- changes, so an approved call runs only if its name still means the tool recorded here. Requests
-- held before this column (null) for an MCP tool are not run once approved: what was approved is
-- not known.
-- AlterTable
ALTER TABLE "tool_approval" ADD COLUMN     "mcp_tool" TEXT;
