// A server for the benchmarks, in its own process so that its CPU time is its own: Dossier on
// the database named by argv[2] ("pglite" or a PostgreSQL URL), or with "baseline" a bare
// graphql-yoga `{ hello }`. Prints `listening <url>`; answers the IPC message "stats" with the
// CPU time used and the SQL statements sent so far.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createSchema, createYoga } from "graphql-yoga";
import { createApp } from "../src/app.js";
import { openDatabase } from "../src/db/open-database.js";
import { createEventBus } from "../src/events/topics.js";
import { silentLogger } from "../src/logger.js";
import { startHttpServer } from "../src/server/http-server.js";

const target = process.argv[2] ?? "pglite";
let statements = 0;

async function start(): Promise<string> {
  if (target === "baseline") {
    const yoga = createYoga({ schema: createSchema({ typeDefs: "type Query { hello: String! }", resolvers: { Query: { hello: () => "world" } } }), logging: false });
    const server = createServer(yoga);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  }
  const db = await openDatabase(target === "pglite" ? { kind: "pglite" } : { kind: "postgres", url: target }, { onQuery: () => void (statements += 1) });
  await db.migrate();
  const app = createApp({ db, events: createEventBus(), logger: silentLogger, authRequired: false });
  return (await startHttpServer({ app, port: 0, host: "127.0.0.1" })).url;
}

process.on("message", (message) => {
  if (message !== "stats") return;
  const cpu = process.cpuUsage();
  process.send!({ cpuMicros: cpu.user + cpu.system, statements });
});
process.stdout.write(`listening ${await start()}\n`);
// An orderly exit, so that `node --cpu-prof` writes its profile when the benchmark stops the server.
process.on("SIGTERM", () => process.exit(0));
