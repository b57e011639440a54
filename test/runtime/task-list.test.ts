// The task list's state is a fold over the run's own task_list calls in its log: only calls that
// ran and succeeded count, a declined (not executed) call changed nothing, and an edited call ran
// with the person's arguments, which its result names.
import { describe, expect, it } from "vitest";
import type { LoggedMessage } from "../../src/runtime/ports/conversation-log.js";
import { declinedResult, repeatedKeyResult } from "../../src/runtime/tools/approval-gate.js";
import { editedNote } from "../../src/runtime/tools/execute-tool-calls.js";
import { stoppedResult } from "../../src/runtime/loop/held-stops.js";
import { createTaskListTool } from "../../src/runtime/tools/task-list.js";

let seq = 0;
const entry = (fields: Partial<LoggedMessage>): LoggedMessage =>
  ({
    id: `m${++seq}`,
    conversationId: "c",
    seq,
    content: "",
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    runId: "r",
    createdAt: new Date(0),
    ...fields,
  }) as LoggedMessage;

/** One assistant step calling task_list with `args`, and its logged result. */
const step = (id: string, args: object, result: string) => [
  entry({ role: "ASSISTANT", toolCalls: [{ id, name: "task_list", arguments: JSON.stringify(args) }] }),
  entry({ role: "TOOL", toolCallId: id, toolName: "task_list", content: result }),
];

const context = {} as Parameters<ReturnType<typeof createTaskListTool>["execute"]>[1];

describe("the task list rebuilt from the log", () => {
  it("replays calls that ran, with the arguments a person edited them to, and skips calls not executed", async () => {
    const call = { name: "task_list" };
    const log = [
      ...step("t1", { action: "add", title: "read the brief" }, "1. [ ] read the brief"),
      ...step("t2", { action: "add", title: "delete the archive" }, declinedResult(call, "no")),
      ...step(
        "t3",
        { action: "add", title: "drop tables" },
        `${editedNote(call, '{"action":"add","title":"back up ]","tags":[]\n}')}1. [ ] read the brief\n2. [ ] back up ]`,
      ),
      ...step("t4", { action: "complete", id: 1 }, repeatedKeyResult(call, "id")),
      ...step("t5", { action: "add", title: "stopped" }, stoppedResult("AFTER_TURN")),
      ...step("t6", { action: "complete", id: 9 }, "Error: There is no task 9."),
      ...step("t7", { action: "add", title: "x" }, `${editedNote(call, '{"action":"complete","id":7}')}Error: There is no task 7.`),
    ];
    const tool = createTaskListTool(log);
    expect(await tool.execute({ action: "add", title: "listed" }, context)).toBe("1. [ ] read the brief\n2. [ ] back up ]\n3. [ ] listed");
  });
});
