// A real HTTP endpoint receiving Dossier's webhooks, as an integrator would run one: it records
// every request and answers what the test tells it to (by default 200), and verifies signatures
// with the `standardwebhooks` library, not with Dossier's own code.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import type { WebhookEventType } from "../../sdk/generated/graphql.js";

/** Every event type the issue names, written out here (not read from the server's code), so a missing one fails. */
export const ALL: WebhookEventType[] = [
  "RUN_SUCCEEDED",
  "RUN_FAILED",
  "RUN_CANCELLED",
  "RUN_TIMED_OUT",
  "RUN_WAITING",
  "RUN_PAUSED",
  "RUN_RESUMED",
  "CHECKPOINT_UPDATED",
  "PUBLICATION_VERSION_CREATED",
  "WORKSPACE_ARCHIVED",
  "WORKSPACE_DELETED",
  "SCORE_CREATED",
];

/** A request as it arrived: its path and query (`url`), headers and body. */
export type Received = { url: string; headers: IncomingHttpHeaders; body: string; at: number };

/** What to answer a request: a status code, "hang" (never answer), or a 302 redirect to a URL. */
export type Answer = number | "hang" | { redirect: string };

export type Receiver = {
  url: string;
  /** host:port, as WEBHOOK_ALLOWED_HOSTS names it. */
  host: string;
  received: Received[];
  /** The next answers, in order; 200 once they are used up. */
  answers: Answer[];
  /** The event the request carries, verified with standardwebhooks against `secret` (throws when it does not verify). */
  verify(request: Received, secret: string): { type: string; timestamp: string; data: Record<string, unknown> };
  close(): Promise<void>;
};

export async function startReceiver(answers: Answer[] = []): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  const state = { answers };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ url: request.url ?? "", headers: request.headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() });
      const answer = state.answers.shift() ?? 200;
      if (answer === "hang") {
        hanging.add(response);
        return;
      }
      if (typeof answer === "object") {
        response.writeHead(302, { location: answer.redirect }).end();
        return;
      }
      response.writeHead(answer, { "content-type": "text/plain" }).end(answer < 300 ? "ok" : "no");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    host: `127.0.0.1:${port}`,
    received,
    get answers() {
      return state.answers;
    },
    set answers(next: Answer[]) {
      state.answers = next;
    },
    verify(request, secret) {
      const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
      return new Webhook(secret).verify(request.body, headers) as ReturnType<Receiver["verify"]>;
    },
    async close() {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
