// The per-run task list (R15). Its state is a fold over the run's own task_list calls in the
// log, so a resumed run (another process, after a crash) sees exactly the list it had. Only calls
// that ran and succeeded count: a call held for a person and declined (or not run for another
// reason: its result starts "[not executed") changed nothing, and a call a person edited ran with
// the person's arguments, which its result names (execute-tool-calls.ts, editedNote), not with
// the ones the model asked for.
import type { LoggedMessage } from "../ports/conversation-log.js";
import type { ToolSchema } from "../ports/model.js";
import { type Tool, ToolError } from "../ports/tool.js";
import { toolCallsOf } from "../../domain/json-columns.js";
import { editedNote } from "./execute-tool-calls.js";

type Task = { id: number; title: string; done: boolean };
type Action = { action: "add"; title: string } | { action: "complete"; id: number } | { action: "list" };

function parseAction(args: unknown): Action {
  const a = args as Partial<{ action: string; title: string; id: number }>;
  if (a?.action === "add" && typeof a.title === "string" && a.title.trim() !== "") return { action: "add", title: a.title.trim() };
  if (a?.action === "complete" && Number.isInteger(a.id)) return { action: "complete", id: a.id! };
  if (a?.action === "list") return { action: "list" };
  throw new ToolError('Use {"action":"add","title":…}, {"action":"complete","id":…} or {"action":"list"}.');
}

function apply(tasks: Task[], action: Action): Task[] {
  if (action.action === "add") return [...tasks, { id: tasks.length + 1, title: action.title, done: false }];
  if (action.action === "complete") {
    if (!tasks.some((task) => task.id === action.id)) throw new ToolError(`There is no task ${action.id}.`);
    return tasks.map((task) => (task.id === action.id ? { ...task, done: true } : task));
  }
  return tasks;
}

const render = (tasks: Task[]) => (tasks.length === 0 ? "The task list is empty." : tasks.map((t) => `${t.id}. [${t.done ? "x" : " "}] ${t.title}`).join("\n"));

const EDITED = editedNote({ name: "task_list" }, "");
const EDITED_PREFIX = EDITED.slice(0, EDITED.indexOf("]\n"));

/**
 * How a task_list call ran, read from its result: null when it did not run or failed (an error, a
 * declined or otherwise not executed call), else the arguments a person edited it to, if any.
 */
function ranWith(content: string): { edited: string | null } | null {
  if (content.startsWith("Error:") || content.startsWith("[not executed")) return null;
  if (!content.startsWith(EDITED_PREFIX)) return { edited: null };
  // `${prefix}${edited}]\n${output}`: the edited arguments are the first JSON text followed by "]\n".
  const rest = content.slice(EDITED_PREFIX.length);
  for (let end = rest.indexOf("]\n"); end !== -1; end = rest.indexOf("]\n", end + 1)) {
    try {
      JSON.parse(rest.slice(0, end));
    } catch {
      continue;
    }
    return rest.startsWith("Error:", end + 2) ? null : { edited: rest.slice(0, end) };
  }
  return null;
}

/** The same for every run: one object, whose tokens the request budget counts once (memo-cache.ts). */
const TASK_LIST_SCHEMA: ToolSchema = {
  name: "task_list",
  description: "Your task list for this run: add a task, complete one by id, or list them.",
  parameters: {
    type: "object",
    properties: {
      action: { type: "string", enum: ["add", "complete", "list"] },
      title: { type: "string" },
      id: { type: "integer" },
    },
    required: ["action"],
  },
};

/** The task list tool for one run, starting from the state its log implies. */
export function createTaskListTool(runLog: readonly LoggedMessage[]): Tool {
  const ran = new Map(runLog.flatMap((m) => (m.role === "TOOL" && m.toolCallId !== null ? [[m.toolCallId, ranWith(m.content)] as const] : [])));
  let tasks: Task[] = [];
  for (const message of runLog) {
    for (const call of toolCallsOf(message.toolCalls) ?? []) {
      const result = call.name === "task_list" ? ran.get(call.id) : undefined;
      if (result === undefined || result === null) continue;
      try {
        tasks = apply(tasks, parseAction(JSON.parse(result.edited ?? call.arguments)));
      } catch {
        // A call that failed then fails the same way now; it changed nothing.
      }
    }
  }
  return {
    schema: TASK_LIST_SCHEMA,
    async execute(args) {
      tasks = apply(tasks, parseAction(args));
      return render(tasks);
    },
  };
}
