// Imports every type module (each registers its types and root fields) and builds the schema.
import { builder } from "./builder.js";
import "./types/scalars.js";
import "./types/errors.js";
import "./types/principal.js";
import "./types/access-token.js";
import "./types/workspace.js";
import "./types/conversation.js";
import "./types/publication.js";
import "./types/trace.js";
import "./types/trace-updates.js";
import "./types/agent-profile.js";
import "./types/run.js";
import "./types/run-events.js";
import "./types/tool-approval.js";
import "./types/run-output.js";
import "./types/evidence.js";
import "./types/spill.js";
import "./types/artifact.js";
import "./types/workspace-link.js";
import "./types/history.js";
import "./types/history-catalog.js";
import "./types/history-search.js";
import "./types/checkpoint.js";
import "./types/skill.js";
import "./types/mcp-server.js";
import "./types/webhook.js";

export const schema = builder.toSchema({ sortSchema: true });
