// The SDK's SSE subscriptions against scripted responses: a stream that ends without its
// `complete` event is a dropped connection, not an end — subscribe() says so, and traceUpdates()
// resumes after the last update it saw; a refusal is a DossierRequestError with its status.
import { print } from "graphql";
import { describe, expect, it } from "vitest";
import { createClient, DossierRequestError, documentIdOf } from "../../sdk/client.js";
import { WorkspaceEventsDocument } from "../../sdk/generated/graphql.js";

const event = (data: unknown) => `event: next\ndata: ${JSON.stringify(data)}\n\n`;
const COMPLETE = "event: complete\ndata:\n\n";
const stream = (text: string) => new Response(text, { headers: { "content-type": "text/event-stream" } });
const update = (seq: number, kind: string) => ({
  traceUpdates: { __typename: "TraceUpdate", seq: String(seq), kind, at: "2026-12-02T00:00:00.000Z", span: null, event: null },
});

/** A client whose fetch answers each request with the next scripted response, keeping the bodies sent. */
function scripted(responses: Response[]) {
  const bodies: Record<string, any>[] = [];
  const fetch = (async (_url: string, init?: RequestInit) => {
    bodies.push(JSON.parse(String(init?.body)));
    return responses.shift() ?? new Response("{}", { status: 500 });
  }) as typeof globalThis.fetch;
  return { bodies, client: createClient({ url: "http://dossier.test/graphql", fetch, subscriptions: "sse", trustedDocuments: true }) };
}

describe("the SDK over SSE", () => {
  it("reads a stream's results to its complete event, and takes a stream that ends without it for a dropped connection", async () => {
    const { client, bodies } = scripted([
      stream(`:\n\n${event({ data: { workspaceEvents: { kind: "GOAL_UPDATED" } } })}${COMPLETE}`),
      stream(`:\n\n${event({ data: { workspaceEvents: { kind: "GOAL_UPDATED" } } })}`),
    ]);
    const complete = client.subscribe(WorkspaceEventsDocument, { workspaceId: "w" });
    expect((await complete.next()).value).toEqual({ workspaceEvents: { kind: "GOAL_UPDATED" } });
    expect((await complete.next()).done).toBe(true);

    const dropped = client.subscribe(WorkspaceEventsDocument, { workspaceId: "w" });
    expect((await dropped.next()).value).toEqual({ workspaceEvents: { kind: "GOAL_UPDATED" } });
    await expect(dropped.next()).rejects.toMatchObject({ name: "DossierRequestError", status: 0 });
    expect(bodies[0]).toEqual({ documentId: await documentIdOf(print(WorkspaceEventsDocument)), variables: { workspaceId: "w" } });
  });

  it("resumes traceUpdates after a stream that ended without its complete event, from the last update seen", async () => {
    const { client, bodies } = scripted([
      stream(event({ data: update(1, "SPAN_STARTED") }) + event({ data: update(2, "EVENT_ADDED") })),
      stream(event({ data: update(3, "TRACE_ENDED") }) + COMPLETE),
    ]);
    const kinds: string[] = [];
    for await (const u of client.traceUpdates("run-1")) kinds.push(`${u.seq} ${u.kind}`);
    expect(kinds).toEqual(["1 SPAN_STARTED", "2 EVENT_ADDED", "3 TRACE_ENDED"]);
    expect(bodies.map((body) => body.variables)).toEqual([{ runId: "run-1" }, { runId: "run-1", afterSeq: "2" }]);
  });

  it("reports a refused subscription with the response's status and errors, without retrying it", async () => {
    const refusal = { errors: [{ message: "No trusted document has that documentId.", extensions: { code: "TRUSTED_DOCUMENT_NOT_FOUND" } }] };
    const { client, bodies } = scripted([Response.json(refusal, { status: 400 })]);
    const error = await client
      .traceUpdates("run-1")
      .next()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DossierRequestError);
    expect(error).toMatchObject({ status: 400, errors: refusal.errors });
    expect(bodies).toHaveLength(1);
  });
});
