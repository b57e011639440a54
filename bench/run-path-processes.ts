// The processes of bench/run-path.ts: Dossier (bench/run-path-server.ts) and the baseline
// (bench/server-process.ts), each forked from its bundle, answering `stats` with its CPU time, SQL
// statements, transactions and trace records so far; and the GraphQL requests sent to them.
import { type ChildProcess, fork } from "node:child_process";
import type { DossierClient } from "../sdk/client.js";
import { NODE_ENV } from "../scripts/build.mjs";
import { post as postOnce, replyOf, serverFlags } from "./server-load.js";

export type Stats = { cpuMicros: number; statements: number; transactions: number; records: number };
export type Child = {
  url: string;
  wsUrl: string;
  child: ChildProcess;
  /** The client whose subscriptions watch this server's runs settle (opened on first use). */
  watching?: DossierClient;
  stats(): Promise<Stats>;
  stop(): Promise<void>;
};
export async function spawn(script: string, args: string[]): Promise<Child> {
  const child = fork(script, args, { execArgv: serverFlags(), env: { ...NODE_ENV, ...process.env }, stdio: ["ignore", "pipe", "inherit", "ipc"] });
  const [url, wsUrl] = await new Promise<string[]>((resolve, reject) => {
    let output = "";
    child.stdout!.on("data", (data: Buffer) => {
      output += data.toString();
      const match = /listening (\S+)(?: (\S+))?/.exec(output);
      if (match) resolve([match[1]!, match[2] ?? ""]);
    });
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  const spawned: Child = {
    url: url!,
    wsUrl: wsUrl!,
    child,
    stats: () => {
      const reply = replyOf<Stats>(child, "stats");
      child.send("stats");
      return reply;
    },
    async stop() {
      await spawned.watching?.close();
      return new Promise((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      });
    },
  };
  return spawned;
}
/** A request, sent again once when a kept-alive connection was reset under it (this machine's load). */
export async function post(url: string, query: string, variables: Record<string, unknown> = {}): Promise<Record<string, any>> {
  try {
    return await postOnce(url, query, variables);
  } catch (error) {
    if (!(error instanceof TypeError) || /mutation/.test(query)) throw error;
    return postOnce(url, query, variables);
  }
}
