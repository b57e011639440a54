-- What a person deciding on a call of an MCP tool was shown, as a hash: the tool's description and
-- input schema as its server listed them and the server's endpoint. An approved call whose tool's
-- digest differs by the time it would run is not run. Null for Dossier's own tools and older requests.
-- AlterTable
ALTER TABLE "tool_approval" ADD COLUMN     "mcp_tool_digest" TEXT;
