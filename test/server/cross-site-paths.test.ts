// GraphQL runs at its one address only. Yoga would run it for any URL ending in /graphql; had
// Dossier's guards (another site's page refused with 403, non-JSON posts with 415) checked only
// the exact path, a form posted to /graphql/ or /x/graphql would create a workspace on the keyless
// default. Every other spelling of the address is 404 before anything reads it, over HTTP, SSE
// and WebSocket, while the exact address, with a query string, still works.
import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startTestApp, type TestApp } from "../support/test-app.js";

const evil = "http://evil.example";
const MUTATION = 'mutation { createWorkspace(input: { title: "Forged", goal: "Sent by another site" }) { __typename } }';

/** The paths Yoga would have taken for its endpoint, as a browser or a client may send them (verbatim). */
const ODD_PATHS = ["/graphql/", "/x/graphql", "/x/graphql/", "/?/graphql", "/?x=/graphql/", "//graphql", "///graphql/", "/%67raphql", "/graphql/.", "/GRAPHQL"];

/** Another site's page (an Origin, or only Sec-Fetch-Site), and a client that is no page. */
const FOREIGN_OR_NONE: Record<string, string>[] = [{ origin: evil }, { "sec-fetch-site": "cross-site" }, {}];

type Answer = { status: number; body: string };

/** One request with its path sent exactly as given (fetch would normalise it). */
function send(port: number, path: string, method: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = request({ host: "127.0.0.1", port, path, method, headers: { host: `localhost:${port}`, ...headers } }, (response) => {
      let text = "";
      response.setEncoding("utf8").on("data", (chunk: string) => {
        text += chunk;
        // An SSE stream stays open: its first event is all that is needed.
        if (response.headers["content-type"]?.startsWith("text/event-stream")) response.destroy();
      });
      const done = () => resolve({ status: response.statusCode ?? 0, body: text });
      response.on("end", done).on("close", done);
    });
    sent.on("error", reject);
    sent.end(body);
  });
}

describe("GraphQL at any other path than its own", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("runs no mutation a form, multipart or text/plain post sends there, from another site's page or without an origin", async () => {
    t = await startTestApp("pglite", { listen: true });
    const port = t.server!.port;
    // The control: the same mutation as JSON at the endpoint itself succeeds.
    const control = await send(port, "/graphql?from=control", "POST", { "content-type": "application/json" }, JSON.stringify({ query: MUTATION }));
    expect(control.body).toContain("CreateWorkspaceSuccess");
    const boundary = "----dossier";
    const multipart = [
      `--${boundary}\r\ncontent-disposition: form-data; name="operations"\r\n\r\n${JSON.stringify({ query: MUTATION })}\r\n`,
      `--${boundary}\r\ncontent-disposition: form-data; name="map"\r\n\r\n{}\r\n--${boundary}--\r\n`,
    ].join("");
    const bodies: [string, string][] = [
      ["application/x-www-form-urlencoded", new URLSearchParams({ query: MUTATION }).toString()],
      [`multipart/form-data; boundary=${boundary}`, multipart],
      ["text/plain", JSON.stringify({ query: MUTATION })],
      ["application/json", JSON.stringify({ query: MUTATION })],
    ];
    const answers: string[] = [];
    for (const path of ODD_PATHS)
      for (const origin of FOREIGN_OR_NONE)
        for (const [type, body] of bodies) {
          const answer = await send(port, path, "POST", { ...origin, "content-type": type }, body);
          answers.push(`${path} ${type.split(";")[0]} ${answer.status}`);
          expect(answer.body).not.toContain("CreateWorkspaceSuccess");
        }
    expect(answers.filter((line) => !line.endsWith(" 404"))).toEqual([]);
    // At the endpoint, with a query string, another site's page is still refused.
    for (const [type, body] of bodies) expect((await send(port, "/graphql?x=1", "POST", { origin: evil, "content-type": type }, body)).status).toBe(403);
    expect(await t.app.db.prisma.workspace.count()).toBe(1);
  });

  it("opens no SSE subscription, answers no GET, HEAD or preflight, and upgrades no WebSocket there", async () => {
    t = await startTestApp("pglite", { listen: true });
    const port = t.server!.port;
    const subscription = encodeURIComponent('subscription { runEvents(runId: "r") { status } }');
    const listening = t.listeners();
    for (const path of ODD_PATHS) {
      const query = `${path}${path.includes("?") ? "&" : "?"}query=`;
      for (const headers of FOREIGN_OR_NONE) {
        expect((await send(port, `${query}${subscription}`, "GET", { accept: "text/event-stream", ...headers })).status).toBe(404);
        expect((await send(port, `${query}${encodeURIComponent("{ __typename }")}`, "GET", headers)).status).toBe(404);
        expect((await send(port, `${query}${encodeURIComponent("{ __typename }")}`, "HEAD", headers)).status).toBe(404);
      }
      const preflight = await send(port, path, "OPTIONS", { origin: evil, "access-control-request-method": "POST" });
      expect(preflight.status, path).not.toBe(200);
      expect(preflight.body).toBe("");
      for (const origin of [evil, undefined]) {
        const status = await new Promise<number>((resolve) => {
          const socket = new WebSocket(`ws://127.0.0.1:${port}${path}`, "graphql-transport-ws", {
            headers: { host: `localhost:${port}` },
            ...(origin ? { origin } : {}),
          });
          socket.once("open", () => (socket.close(), resolve(101)));
          socket.once("unexpected-response", (_request, response) => resolve(response.statusCode ?? 0));
          socket.once("error", () => resolve(-1));
        });
        expect(status, `${path} ${origin}`).not.toBe(101);
      }
    }
    expect(t.listeners()).toBe(listening);
    // The endpoint itself, with a query string, still answers a client that says it takes a GraphQL answer.
    expect((await send(port, `/graphql?query=${encodeURIComponent("{ __typename }")}`, "GET", { accept: "application/json" })).body).toContain("Query");
  });
});
