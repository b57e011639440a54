// The per-run task list (R15). Its state is a fold over the run's own task_list calls in the
// log, so a resumed run (another process, after a crash) sees exactly the list it had.
import type { LoggedMessage } from "../ports/conversation-log.js";
import type { ToolSchema } from "../ports/model.js";
import { type Tool, ToolError } from "../ports/tool.js";
import { toolCallsOf } from "../../domain/json-columns.js";

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
  const succeeded = new Set(runLog.filter((m) => m.role === "TOOL" && !m.content.startsWith("Error:")).map((m) => m.toolCallId));
  let tasks: Task[] = [];
  for (const message of runLog) {
    for (const call of toolCallsOf(message.toolCalls) ?? []) {
      if (call.name !== "task_list" || !succeeded.has(call.id)) continue;
      try {
        tasks = apply(tasks, parseAction(JSON.parse(call.arguments)));
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
