// A schedule's fires and run caps. createSchedule and updateSchedule check the run its fires would
// admit against the run caps of the credential making the change, and store those caps with the
// schedule: every later fire (its timer, triggerSchedule) is admitted within them, whoever made
// the key or token. resumeSchedule and triggerSchedule also check the run against the caps of the
// credential that resumes or triggers it: a capped key cannot set an uncapped schedule going.
import { Prisma, type Schedule } from "../../generated/prisma/client.js";
import { toJsonColumn } from "../json-columns.js";
import { type RunCaps, storedCaps } from "../principal/run-caps.js";
import type { AdmitInput } from "../runs/admission-request.js";
import { assertWithinCaps, parseAdmission } from "../runs/capped-admission.js";

type Template = Pick<Schedule, "agent" | "question"> & { limits: unknown };

/** What each fire of the schedule asks to admit, besides its place (workspace, conversation) and key. */
export function templateOf(schedule: Template): Pick<AdmitInput, "agent" | "question" | "limits"> {
  return { agent: schedule.agent, question: schedule.question, limits: schedule.limits as AdmitInput["limits"] };
}

/**
 * Refuses settings whose fires the caps do not allow (a ValidationError naming `agent` or
 * `limits.<field>` and the cap); the caps to store with the schedule (none: a database NULL).
 */
export function checkSettingsWithin(settings: Template, caps: RunCaps | undefined): Prisma.InputJsonValue | typeof Prisma.DbNull {
  parseAdmission(templateOf(settings), caps);
  return caps ? toJsonColumn(caps) : Prisma.DbNull;
}

/** Refuses a resume or trigger by a credential whose caps do not allow the run the schedule's fires admit. */
export function assertFiresWithin(schedule: Template & Pick<Schedule, "runCaps">, caps: RunCaps | undefined): void {
  if (!caps) return;
  assertWithinCaps(parseAdmission(templateOf(schedule), storedCaps(schedule.runCaps)), caps);
}
