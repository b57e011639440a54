// What one request can make the server load and send is bounded by bytes, not only by items: a
// short document asking for many long texts is refused by its cost before it runs, or answered
// within the response byte budget (MAX_RESPONSE_BYTES) with the texts past it left out as
// RESPONSE_TOO_LARGE errors (a checkpoint's summary, next steps and questions as much as a
// publication's content). Another principal is served meanwhile.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UpdateCheckpointDocument, UpsertSkillDocument } from "../../sdk/generated/graphql.js";
import { LARGE_TEXT_FIELDS } from "../../src/graphql/schema.js";
import { DEFAULT_QUERY_LIMITS } from "../../src/server/hardening.js";
import { openMigratedTestDatabase } from "../support/databases.js";
import { createWorkspace, expectType, publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const MAX_RESPONSE_BYTES = 1_000_000;

let t: TestApp;
let bob: string;
let alice: string;
/** The statements the app's database is sent, as heard. */
const heard: string[] = [];
beforeAll(async () => {
  t = await startTestApp("pglite", {
    listen: true,
    authRequired: true,
    limits: { ...DEFAULT_QUERY_LIMITS, maxResponseBytes: MAX_RESPONSE_BYTES },
    database: () => openMigratedTestDatabase("pglite", { onQuery: (sql) => heard.push(sql) }),
  });
  bob = await t.createPrincipal("bob");
  alice = await t.createPrincipal("alice");
});
afterAll(async () => {
  await t.close();
});

type Answer = { status: number; bytes: number; body: { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] } };

async function post(key: string, query: string, variables?: Record<string, unknown>): Promise<Answer> {
  const response = await fetch(t.server!.url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  const text = await response.text();
  return { status: response.status, bytes: Buffer.byteLength(text), body: JSON.parse(text) as Answer["body"] };
}

/** How many responses /metrics counts as refused for RESPONSE_TOO_LARGE. */
async function tooLargeCount(): Promise<number> {
  const text = await (await fetch(new URL("/metrics", t.server!.url))).text();
  const line = text.split("\n").find((each) => each.startsWith('dossier_graphql_rejected_total{reason="RESPONSE_TOO_LARGE"}'));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

const codes = (answer: Answer) => [...new Set((answer.body.errors ?? []).map((error) => error.extensions?.code))];

describe("a response's size is bounded", () => {
  it("holds the texts that can be long to the budget", () => {
    const long = ["Skill.body", "PublicationVersion.content", "Artifact.content", "ArtifactContent.text", "PublicationChanges.diff", "Evidence.content"];
    expect(LARGE_TEXT_FIELDS).toEqual(
      expect.arrayContaining([...long, "Message.content", "Run.answer", "Span.request", "Span.attributes", "SpanEvent.payload"]),
    );
    const written = ["Checkpoint.summary", "Checkpoint.nextSteps", "CheckpointQuestion.text", "CheckpointProposal.proposal", "RunInput.text", "Run.question"];
    const goals = ["GoalVersion.statement", "FrozenGoal.statement", "Schedule.question"];
    const generated = ["ToolApproval.arguments", "ToolApproval.editedArguments", "AgentProfile.systemPrompt", "RunOutputUpdate.text"];
    expect(LARGE_TEXT_FIELDS).toEqual(expect.arrayContaining([...written, ...goals, ...generated]));
  });

  it("checkpoints: aliases of a checkpoint's long summary, next steps and questions are answered within the byte budget, the rest as RESPONSE_TOO_LARGE", async () => {
    const workspace = await createWorkspace(t.as(bob));
    const input = {
      workspaceId: workspace.id,
      expectedRevision: 0,
      summary: "s".repeat(20_000),
      nextSteps: Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(2_000, "n")),
      questions: Array.from({ length: 3 }, (_, i) => ({ text: `${i}`.padEnd(2_000, "q") })),
    };
    expectType((await t.as(bob).request(UpdateCheckpointDocument, { input })).updateCheckpoint, "UpdateCheckpointSuccess");
    // 20 × 126,000 characters: 2.5 MB of one checkpoint's texts asked for by a document of under 2 KB.
    const aliases = Array.from({ length: 20 }, (_, i) => `c${i}: checkpoint { ... on Checkpoint { summary nextSteps questions { text } } }`);
    const document = `query ($id: ID!) { workspace(id: $id) { ${aliases.join(" ")} } }`;
    expect(document.length).toBeLessThan(2_000);
    const counted = await tooLargeCount();
    const [bobs, alices] = await Promise.all([post(bob, document, { id: workspace.id }), post(alice, "{ skills { name } }")]);
    expect(bobs.status).toBe(200);
    expect(codes(bobs)).toEqual(["RESPONSE_TOO_LARGE"]);
    expect(bobs.bytes).toBeLessThan(MAX_RESPONSE_BYTES + 100_000);
    // The texts that fit are answered whole.
    type Read = { summary: string | null; nextSteps: string[]; questions: { text: string }[] } | null;
    const read = Object.values((bobs.body.data as { workspace: Record<string, Read> }).workspace);
    const whole = read.filter((checkpoint) => checkpoint?.summary === input.summary && checkpoint.nextSteps.join() === input.nextSteps.join());
    expect(whole.length).toBeGreaterThan(0);
    expect(whole.length).toBeLessThan(read.length);
    expect(alices.body.errors).toBeUndefined();
    // /metrics counts the refusal once, however many of the response's texts it left out.
    expect(bobs.body.errors!.length).toBeGreaterThan(1);
    expect((await tooLargeCount()) - counted).toBe(1);
  });

  it("skills: aliases of every skill's 60 KiB body are answered within the byte budget, the rest as RESPONSE_TOO_LARGE, while another principal is served", async () => {
    const body = "s".repeat(60 * 1024);
    for (let i = 0; i < 20; i += 1) {
      const stored = await t.as(bob).request(UpsertSkillDocument, { input: { name: `long-skill-${i}`, description: "Long.", body } });
      expectType(stored.upsertSkill, "UpsertSkillSuccess");
    }
    // 10 × 20 × 60 KiB: 12 MB of bodies asked for by a document of a few hundred bytes.
    const document = `{ ${Array.from({ length: 10 }, (_, i) => `a${i}: skills { name body }`).join(" ")} }`;
    expect(document.length).toBeLessThan(400);
    heard.length = 0;
    const [bobs, alices] = await Promise.all([post(bob, document), post(alice, "{ skills { name } }")]);
    // Bob's skills are read once for his 10 lists of them, Alice's once for hers.
    expect(heard.filter((sql) => /FROM "public"\."skill" /.test(sql))).toHaveLength(2);
    expect(bobs.status).toBe(200);
    expect(codes(bobs)).toEqual(["RESPONSE_TOO_LARGE"]);
    expect(bobs.body.errors![0]!.message).toMatch(new RegExp(`past ${MAX_RESPONSE_BYTES} bytes \\(MAX_RESPONSE_BYTES\\)`));
    expect(bobs.bytes).toBeLessThan(MAX_RESPONSE_BYTES + 500_000);
    expect(alices.body.errors).toBeUndefined();
    expect((alices.body.data as { skills: unknown[] }).skills.length).toBeGreaterThan(0);
  });

  /** Bob's 4 versions of 100,000 characters, and 12 versions of another publication citing all 4. */
  let seeded: Promise<{ publicationId: string; sourceIds: string[] }> | undefined;
  const seedSources = () =>
    (seeded ??= (async () => {
      const long = await Promise.all(Array.from({ length: 4 }, (_, i) => publish(t.as(bob), { title: `Long ${i}`, content: `${i}`.repeat(100_000) })));
      const sources = long.map((each) => ({ publicationId: each.version.publication.id, version: 1 }));
      const first = await publish(t.as(bob), { title: "Derived", content: "derived 1", sources });
      const publicationId = first.version.publication.id;
      for (let n = 2; n <= 12; n += 1) await publish(t.as(bob), { publicationId, content: `derived ${n}`, sources });
      return { publicationId, sourceIds: long.map((each) => each.version.id) };
    })());
  const page = (fields: string, first = 12) =>
    `query ($id: ID!) { node(id: $id) { ... on Publication { versions(first: ${first}) { edges { node { version sources { ${fields} } } } } } } }`;

  it("sources: a page of versions citing the same long sources is refused by its cost, while another principal is served", async () => {
    const { publicationId } = await seedSources();
    // 30 versions' sources' content (12 × 4 × 100,000 characters here, up to 30 × 200 × 1,000,000) asked for by a document of 140 bytes: refused before it runs.
    const [bobs, alices] = await Promise.all([post(bob, page("content", 30), { id: publicationId }), post(alice, "{ skills { name } }")]);
    expect(codes(bobs)).toEqual(["QUERY_TOO_COSTLY"]);
    expect(bobs.body.data).toBeUndefined();
    expect(alices.body.errors).toBeUndefined();
  });

  it("sources: the versions of a page are read together, and a version cited by many is loaded once", async () => {
    const { publicationId, sourceIds } = await seedSources();
    heard.length = 0;
    const read = await post(bob, page("id version"), { id: publicationId });
    expect(read.body.errors).toBeUndefined();
    type Page = { node: { versions: { edges: { node: { sources: { id: string }[] } }[] } } };
    const edges = (read.body.data as Page).node.versions.edges;
    expect(edges.map((edge) => edge.node.sources.map((source) => source.id))).toEqual(Array.from({ length: 12 }, () => sourceIds));
    // One statement reads the 12 versions' sources, and one more the 4 versions they cite.
    expect(heard.filter((sql) => /FROM "public"\."publication_source" /.test(sql))).toHaveLength(1);
    expect(heard.filter((sql) => /FROM "public"\."publication_version" AS "t0" WHERE "t0"\."id" IN \(\$1,\$2,\$3,\$4\)$/.test(sql))).toHaveLength(1);
  });
});
