// Workspace schedules in one instance, on every backend, through the SDK: typed validation errors,
// the overlap policies against a held model (a real HTTP server speaking the OpenAI protocol),
// triggerSchedule, Run.schedule and RunFilter.scheduleId, pauseAfterFailures, an archived
// workspace's fires SKIPPED, a deleted workspace's schedules deleted, and each fire's answer
// published as the next version of the schedule's publication.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { diffLines } from "diff";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ArchiveWorkspaceDocument,
  type CreateScheduleInput,
  CreateScheduleDocument,
  DeleteWorkspaceDocument,
  PauseScheduleDocument,
  ScheduledRunsDocument,
  ScheduleFiresDocument,
  TriggerScheduleDocument,
  WorkspaceSchedulesDocument,
} from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { backends } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { type ChatBody, type OpenAIStreamStub, startOpenAIStreamStub, type StubTurn } from "../support/openai-stream-stub.js";
import { questionOf } from "../support/requests.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

/** Answers by question: "held …" waits until released (each backend holds its own), "fail …" is refused, anything else answers at once. */
function holdModel(): { release: () => void; until: Promise<void> } {
  let release: () => void = () => undefined;
  const until = new Promise<void>((resolve) => (release = resolve));
  return { release, until };
}
let held = holdModel();

/** The model requests of "report" runs, in order; each report differs from the one before in some lines. */
const reportRequests: ChatBody[] = [];

function turnFor(question: string, body: ChatBody): StubTurn {
  if (question.startsWith("report")) {
    const n = reportRequests.push(body);
    return { text: [`# Battery makers\n\nNorthvolt: ${n} GWh\nCATL: steady\n${n % 2 ? "ACC: paused\n" : "Verkor: ramping\nPowerCo: planned\n"}`] };
  }
  if (question.startsWith("held")) return { text: ["working… ", "done"], pause: { index: 1, until: held.until } };
  if (question.startsWith("fail")) return { refuse: 400 };
  return { text: [`answer ${Date.now()}`] };
}

describe.each(backends)("workspace schedules on %s", (backend) => {
  let stub: OpenAIStreamStub;
  let t: TestApp;

  beforeAll(async () => {
    held = holdModel();
    stub = await startOpenAIStreamStub((body) => turnFor(questionOf(String(body.messages.findLast((m) => m.role === "user")?.content)), body));
    t = await startTestApp(backend, {
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-schedules-")),
        schedulerPollMs: 200,
      },
    });
  });
  afterAll(async () => {
    held.release();
    await t?.close();
    await stub?.close();
  });

  async function create(input: Omit<CreateScheduleInput, "workspaceId"> & { workspaceId?: string }) {
    const workspaceId = input.workspaceId ?? (await createWorkspace(t.client)).id;
    const payload = (await t.client.request(CreateScheduleDocument, { input: { ...input, workspaceId } })).createSchedule;
    return { workspaceId, schedule: expectType(payload, "CreateScheduleSuccess").schedule };
  }

  async function fires(id: string) {
    const node = (await t.client.request(ScheduleFiresDocument, { id, first: 100 })).node;
    if (node?.__typename !== "Schedule") throw new Error("no schedule");
    return node.fires.edges.map((e) => e.node).reverse();
  }

  async function pause(id: string) {
    expectType((await t.client.request(PauseScheduleDocument, { input: { id } })).pauseSchedule, "PauseScheduleSuccess");
  }

  it("refuses settings with a ValidationError naming the field", async () => {
    const workspace = await createWorkspace(t.client);
    const cases: [Partial<CreateScheduleInput>, string][] = [
      [{ cron: "0 8 * * 1", intervalSeconds: 60 }, "intervalSeconds"],
      [{}, "cron"],
      [{ cron: "every monday" }, "cron"],
      [{ cron: "0 8 * * 1", timezone: "Mars/Olympus" }, "timezone"],
      [{ intervalSeconds: 60, startAt: "2030-01-02T00:00:00Z", endAt: "2030-01-01T00:00:00Z" }, "endAt"],
      [{ intervalSeconds: 0 }, "intervalSeconds"],
    ];
    for (const [settings, field] of cases) {
      const payload = (await t.client.request(CreateScheduleDocument, { input: { workspaceId: workspace.id, question: "q", ...settings } })).createSchedule;
      const error = expectType(payload, "ValidationError");
      expect(error.issues.map((issue) => issue.field)).toContain(field);
    }
    // February 30th never comes: the cron expression is at fault, not an endAt never given.
    const never = (await t.client.request(CreateScheduleDocument, { input: { workspaceId: workspace.id, question: "q", cron: "0 0 30 2 *" } })).createSchedule;
    expect(expectType(never, "ValidationError").issues).toEqual([{ field: "cron", message: "never fires: no date matches it" }]);
    const other = t.as(await t.createPrincipal(`other-${backend}`));
    const theirs = (await other.request(CreateScheduleDocument, { input: { workspaceId: workspace.id, question: "q", intervalSeconds: 60 } })).createSchedule;
    expectType(theirs, "NotFoundError");
  });

  it("SKIP records fires SKIPPED while the previous run is active; runs know their schedule", { timeout: 90_000 }, async () => {
    const { workspaceId, schedule } = await create({ question: "held skip", intervalSeconds: 1, overlap: "SKIP" });
    const recorded = await waitUntil(async () => {
      const list = await fires(schedule.id);
      return list.filter((f) => f.status === "SKIPPED").length >= 2 ? list : undefined;
    }, 30_000);
    await pause(schedule.id);
    expect(recorded[0]!.status).toBe("ADMITTED");
    expect(recorded.slice(1).every((f) => f.status === "SKIPPED" && /still active/.test(f.reason ?? ""))).toBe(true);
    const runs = (await t.client.request(ScheduledRunsDocument, { scheduleId: schedule.id, first: 10 })).runs.edges.map((e) => e.node);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.schedule?.id).toBe(schedule.id);
    expect(runs[0]!.fireTime).toBe(recorded[0]!.fireTime);
    const listed = (await t.client.request(WorkspaceSchedulesDocument, { workspaceId })).workspace?.schedules;
    expect(listed?.edges.map((e) => e.node.id)).toEqual([schedule.id]);
    expect(listed?.edges[0]?.node.paused).toBe(true);
  });

  it("ENQUEUE queues a run behind the active one; INTERRUPT cancels the active run", { timeout: 90_000 }, async () => {
    const enqueue = await create({ question: "held enqueue", intervalSeconds: 1, overlap: "ENQUEUE" });
    const queued = await waitUntil(async () => {
      const list = await fires(enqueue.schedule.id);
      return list.length >= 2 ? list : undefined;
    }, 30_000);
    await pause(enqueue.schedule.id);
    expect(queued.every((f) => f.status === "ADMITTED")).toBe(true);
    const statuses = queued.map((f) => f.run?.status);
    expect(statuses[0]).toMatch(/QUEUED|RUNNING/);
    expect(statuses[1]).toBe("QUEUED");

    const interrupt = await create({ question: "held interrupt", intervalSeconds: 1, overlap: "INTERRUPT" });
    const interrupted = await waitUntil(async () => {
      const list = await fires(interrupt.schedule.id);
      return list.length >= 2 && list[0]!.run?.status === "CANCELLED" ? list : undefined;
    }, 30_000);
    await pause(interrupt.schedule.id);
    expect(interrupted[1]!.status).toBe("ADMITTED");
  });

  it("each fire's answer is the next version of the schedule's publication, with what changed; the next run is told the previous version", {
    timeout: 90_000,
  }, async () => {
    // SKIP: each fire comes after the previous run ended, and so after its answer was published.
    reportRequests.length = 0;
    const { schedule } = await create({ question: "report", intervalSeconds: 1, overlap: "SKIP" });
    const runIds = await waitUntil(async () => {
      const runs = (await t.client.request(ScheduledRunsDocument, { scheduleId: schedule.id, first: 10 })).runs.edges.map((e) => e.node);
      const done = runs.filter((r) => r.status === "SUCCEEDED");
      return done.length >= 2 ? done.map((r) => idOfType(r.id, "Run")!) : undefined;
    }, 60_000);
    await pause(schedule.id);
    const prisma = t.app.db.prisma;
    const runs = await prisma.run.findMany({ where: { id: { in: runIds } }, orderBy: { fireTime: "asc" }, include: { publication: true } });
    const versions = await prisma.publicationVersion.findMany({ where: { id: { in: runs.map((r) => r.publication!.publicationVersionId!) } } });
    expect(new Set(versions.map((v) => v.publicationId)).size).toBe(1);
    expect(runs[0]!.continuesPublicationId).toBeNull();
    expect(runs[1]!.continuesPublicationId).toBe(versions[0]!.publicationId);

    // changesFromPrevious counts what a line diff of the two texts counts.
    const [first, second] = versions.sort((a, b) => a.version - b.version);
    const parts = diffLines(first!.content, second!.content);
    const count = (kind: "added" | "removed") => parts.filter((part) => part[kind]).reduce((sum, part) => sum + (part.count ?? 0), 0);
    expect(first!.changesPreviousVersion).toBeNull();
    expect([second!.changesPreviousVersion, second!.changesAddedLines, second!.changesRemovedLines]).toEqual([1, count("added"), count("removed")]);
    expect(count("added") + count("removed")).toBeGreaterThan(0);
    // The second run's model request carried the first version's text.
    const told = (body: ChatBody) => body.messages.some((m) => m.content?.includes(first!.content.trim()));
    expect(reportRequests.some(told)).toBe(true);
    expect(reportRequests.slice(0, 1).some(told)).toBe(false);
  });

  it("triggerSchedule fires now; an archived workspace's fires are SKIPPED; deleting it deletes its schedules", { timeout: 60_000 }, async () => {
    const { workspaceId, schedule } = await create({ question: "now", cron: "0 0 1 1 *", timezone: "Europe/Berlin" });
    const triggered = expectType((await t.client.request(TriggerScheduleDocument, { input: { id: schedule.id } })).triggerSchedule, "TriggerScheduleSuccess");
    expect(triggered.fire.status).toBe("ADMITTED");
    expect(triggered.schedule.nextFireAt).toBe(schedule.nextFireAt);
    await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId } });
    const skipped = expectType((await t.client.request(TriggerScheduleDocument, { input: { id: schedule.id } })).triggerSchedule, "TriggerScheduleSuccess");
    expect([skipped.fire.status, skipped.fire.reason]).toEqual(["SKIPPED", "the workspace is archived"]);
    await t.client.request(DeleteWorkspaceDocument, { input: { workspaceId } });
    expect(await t.app.db.prisma.schedule.count({ where: { id: idOfType(schedule.id, "Schedule")! } })).toBe(0);
  });

  it("pauses itself after pauseAfterFailures consecutive failed runs", { timeout: 90_000 }, async () => {
    const { schedule } = await create({ question: "fail often", intervalSeconds: 1, overlap: "ENQUEUE", pauseAfterFailures: 2 });
    const paused = await waitUntil(async () => {
      const node = (await t.client.request(ScheduleFiresDocument, { id: schedule.id })).node;
      return node?.__typename === "Schedule" && node.paused ? node : undefined;
    }, 60_000);
    expect(paused.pausedReason).toMatch(/2 consecutive failed/);
    const ended = await t.app.db.prisma.run.findMany({
      where: { scheduleId: idOfType(schedule.id, "Schedule")!, status: { in: ["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"] } },
      orderBy: { fireTime: "desc" },
      take: 2,
    });
    expect(ended.map((r) => r.status)).toEqual(["FAILED", "FAILED"]);
  });
});
