// Run by test/runtime/name-lookups.test.ts inside a network namespace of its own whose
// resolv.conf names 127.0.0.1: a name server there answers names under ok.test (with a public
// address no route leads to) and never answers any other. One principal's http_fetch calls look
// up many names that never answer; meanwhile another principal's work — a file read, a fetch of a
// host the operator named (found in /etc/hosts), a fetch of a name that answers — is timed.
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createHttpFetchTool } from "../../src/runtime/tools/http-fetch.js";
import type { ToolContext } from "../../src/runtime/ports/tool.js";
import { startHangingNameServer } from "./hanging-name-server.js";

const HANGING = Number(process.argv[2] ?? 24);
const CAP_MS = Number(process.argv[3] ?? 6_000);

const nameServer = await startHangingNameServer();
const hangingNames = nameServer.hangingNames;

const web = createServer((_request, response) => response.end("local page"));
await new Promise<void>((resolve) => web.listen(0, "127.0.0.1", resolve));
const port = (web.address() as AddressInfo).port;

const tool = createHttpFetchTool({ allowedHosts: ["*.hang.test", "*.ok.test", `localhost:${port}`], maxBytes: 10_000, timeoutMs: 30_000 });
const contextOf = (ownerId: string, id: string): ToolContext =>
  ({ run: { id, ownerId }, runId: id, toolCallId: id, signal: new AbortController().signal }) as unknown as ToolContext;
const outcome = (promise: Promise<string>) =>
  promise.then(
    (text) => text.split("\n")[0]!,
    (error: Error) => error.message,
  );

// The hostile principal's calls, each a name of its own under a zone whose server never answers.
const hostile = Array.from({ length: HANGING }, (_, i) =>
  outcome(tool.execute({ url: `http://r${i}-${Date.now()}.hang.test/` }, contextOf("hostile", `h${i}`))),
);
const started = Date.now();
while (nameServer.queries() < Math.min(HANGING, 4) && Date.now() - started < 2_000) await new Promise((resolve) => setTimeout(resolve, 10));

/** How long `work` took, or null when it did not finish within CAP_MS. */
async function timed(work: () => Promise<string>): Promise<{ ms: number | null; result?: string }> {
  const start = performance.now();
  const capped = new Promise<null>((resolve) => setTimeout(() => resolve(null), CAP_MS).unref());
  const result = await Promise.race([work(), capped]);
  return result === null ? { ms: null } : { ms: Math.round(performance.now() - start), result };
}

const [fileRead, namedHost, answeredName] = await Promise.all([
  timed(async () => `${(await readFile(new URL(import.meta.url))).length} bytes`),
  timed(() => outcome(tool.execute({ url: `http://localhost:${port}/` }, contextOf("other", "o1")))),
  timed(() => outcome(tool.execute({ url: `http://page.ok.test/` }, contextOf("other", "o2")))),
]);
const hangingNamesAsked = hangingNames.size;
// What the hostile principal's own first call is told, however long its lookup takes.
const hostileOutcome = await Promise.race([hostile[0]!, new Promise((resolve) => setTimeout(() => resolve(null), 25_000))]);
process.stdout.write(`${JSON.stringify({ queries: nameServer.queries(), hangingNamesAsked, fileRead, namedHost, answeredName, hostileOutcome })}\n`);
process.exit(0);
