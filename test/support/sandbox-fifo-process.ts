// A process whose sandbox holds a FIFO (named pipe), as `mkfifo p` run by run_command leaves it:
// eight read_file calls on it at once (more than libuv's four file-system threads), a write_file
// onto it with and without a program reading it, then an ordinary read_file. Prints one line,
// `RESULT <json>`, with every answer; a file operation that blocked on the FIFO would hold a
// thread for good, and the line would never come.
import { constants, openSync, readSync } from "node:fs";
import path from "node:path";
import type { Tool, ToolContext } from "../../src/runtime/ports/tool.js";
import { createSandboxFileTools } from "../../src/runtime/tools/sandbox-files.js";

const sandbox = process.argv[2]!;
const [write, read] = createSandboxFileTools(sandbox) as [Tool, Tool];
// The file tools use nothing of the run's context.
const context = {} as ToolContext;
const answer = (work: Promise<unknown>) => work.then(String, (error: Error) => `error: ${error.message}`);

const reads = await Promise.all(Array.from({ length: 8 }, () => answer(read.execute({ path: "p" }, context))));
const writeUnread = await answer(write.execute({ path: "p", content: "x" }, context));
// A program holds the FIFO open for reading: the write would now open at once, and is refused all the same.
const reader = openSync(path.join(sandbox, "p"), constants.O_RDONLY | constants.O_NONBLOCK);
const writeRead = await answer(write.execute({ path: "p", content: "x" }, context));
let reached = "nothing";
try {
  reached = `${readSync(reader, Buffer.alloc(16))} bytes`;
} catch (error) {
  reached = (error as NodeJS.ErrnoException).code ?? "error";
}
const seed = await answer(read.execute({ path: "seed.txt" }, context));
console.log(`RESULT ${JSON.stringify({ reads, writeUnread, writeRead, reached, seed })}`);
process.exit(0);
