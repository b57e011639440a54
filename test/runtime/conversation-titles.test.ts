// A new conversation is titled with the start of its first question, cut at 80 UTF-16 units and
// never inside a character: a question whose 80th unit is the first half of an emoji gets a title
// without that emoji, not one ending in U+FFFD. On each path that opens a conversation: a
// schedule's own, a plain admitRun (one statement) and an admission inside a transaction.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateScheduleDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const QUESTION = `${"a".repeat(79)}😀 weekly battery report`;
const TITLE = "a".repeat(79);

describe("conversation titles", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("postgres");
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  const titleOf = async (conversationId: string) => (await t.app.db.prisma.conversation.findUniqueOrThrow({ where: { id: conversationId } })).title;

  it("end at a whole character on every path", { timeout: 60_000 }, async () => {
    const ws = await createWorkspace(t.client);
    const payload = (await t.client.request(CreateScheduleDocument, { input: { workspaceId: ws.id, question: QUESTION, intervalSeconds: 3600 } }))
      .createSchedule;
    const scheduleId = idOfType(expectType(payload, "CreateScheduleSuccess").schedule.id, "Schedule")!;
    const schedule = await t.app.db.prisma.schedule.findUniqueOrThrow({ where: { id: scheduleId } });
    const titles = [await titleOf(schedule.conversationId)];

    const { run } = await admit(t.client, { question: QUESTION });
    const admitted = await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: idOfType(run.id, "Run")! } });
    titles.push(await titleOf(admitted.conversationId));

    const inTransaction = await t.app.db.prisma.$transaction((tx) =>
      t.app.services.admissions.admitIn(tx, { principalId: schedule.ownerId }, { question: QUESTION }, { scheduleId, fireTime: new Date() }, []),
    );
    titles.push(await titleOf(inTransaction.conversationId));
    expect(titles).toEqual([TITLE, TITLE, TITLE]);
  });
});
