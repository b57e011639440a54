// Per-section provenance of a checkpoint (W10, W13): who wrote the summary, each question and the
// next steps, and the publication versions each rests on. A revision that keeps a section keeps
// its author and sources, so an owner resolving one question does not take over — or launder —
// the model's summary; only the sections a change rewrites become the writer's.
import type { CheckpointVersion } from "../../generated/prisma/client.js";
import { checkpointQuestionsOf, checkpointSectionsOf } from "../json-columns.js";

export type SectionAuthor = { kind: "OWNER"; principalId: string } | { kind: "MODEL_RUN"; runId: string; principalId: string };

export type SectionProvenance = { author: SectionAuthor; sourceVersionIds: string[] };

/** The stored shape of `CheckpointVersion.sections`: null for a section with no content. */
export type CheckpointSections = {
  summary: SectionProvenance | null;
  nextSteps: SectionProvenance | null;
  questions: Record<string, SectionProvenance>;
};

export type SectionName = "SUMMARY" | "QUESTION" | "NEXT_STEPS";

/** One section of one revision with its provenance, as listed for readers. */
export type SectionRef = { section: SectionName; questionId: string | null; provenance: SectionProvenance };

export function sectionsOf(checkpoint: Pick<CheckpointVersion, "sections"> | null): CheckpointSections {
  const stored = checkpointSectionsOf(checkpoint?.sections ?? {});
  return { summary: stored.summary ?? null, nextSteps: stored.nextSteps ?? null, questions: stored.questions ?? {} };
}

/** Every section that has content, in reading order: summary, questions, next steps. */
export function sectionList(checkpoint: Pick<CheckpointVersion, "sections" | "questions">): SectionRef[] {
  const sections = sectionsOf(checkpoint);
  const ids = (checkpointQuestionsOf(checkpoint.questions) ?? []).map((q) => q.id);
  return [
    ...(sections.summary ? [{ section: "SUMMARY" as const, questionId: null, provenance: sections.summary }] : []),
    ...ids.flatMap((id) => {
      const provenance = sections.questions[id];
      return provenance ? [{ section: "QUESTION" as const, questionId: id, provenance }] : [];
    }),
    ...(sections.nextSteps ? [{ section: "NEXT_STEPS" as const, questionId: null, provenance: sections.nextSteps }] : []),
  ];
}

/** The union of every section's sources, in first-seen order: what the whole revision rests on. */
export function allSources(sections: CheckpointSections): string[] {
  const all = [sections.summary, ...Object.values(sections.questions), sections.nextSteps].flatMap((p) => p?.sourceVersionIds ?? []);
  return [...new Set(all)];
}

/**
 * The sections of the next revision. A section is rewritten when the change gives it a value
 * different from the one it had — resending an unchanged summary (a client saving a whole form)
 * keeps its author, so a client cannot take over a model's judgement by echoing it.
 */
export function nextSections(input: {
  previous: { summary: string | null; nextSteps: string[]; sections: CheckpointSections } | null;
  summary: string | null;
  nextSteps: string[];
  /** Ids of the questions the change added or whose text or status it changed. */
  rewrittenQuestions: ReadonlySet<string>;
  questionIds: string[];
  writer: SectionProvenance;
}): { sections: CheckpointSections; writerHolds: boolean } {
  const { previous, writer } = input;
  const kept = previous?.sections ?? { summary: null, nextSteps: null, questions: {} };
  const summaryRewritten = input.summary !== (previous?.summary ?? null);
  const nextStepsRewritten = !sameList(input.nextSteps, previous?.nextSteps ?? []);
  const sections: CheckpointSections = {
    summary: input.summary === null ? null : summaryRewritten ? writer : (kept.summary ?? writer),
    nextSteps: input.nextSteps.length === 0 ? null : nextStepsRewritten ? writer : (kept.nextSteps ?? writer),
    questions: Object.fromEntries(input.questionIds.map((id) => [id, input.rewrittenQuestions.has(id) ? writer : (kept.questions[id] ?? writer)])),
  };
  // Clearing a section rewrites it but leaves nothing for the writer's sources to rest on.
  const writerHolds = [sections.summary, sections.nextSteps, ...Object.values(sections.questions)].includes(writer);
  return { sections, writerHolds };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}
