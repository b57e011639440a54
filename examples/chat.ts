// A terminal chat over one Dossier conversation: each question becomes a run in the conversation,
// and its answer is printed as the model writes it (client.runOutput), not all at once at the end.
//
//   DOSSIER_URL=http://localhost:4000/graphql DOSSIER_API_KEY=dsk_… npm run example:chat
//
// Type a question and Enter; an empty line or Ctrl-D ends the chat. Questions given as arguments
// are asked in turn instead, without reading the terminal:
//
//   npm run example:chat -- "Which EU cell makers plan 2027 capacity?" "And which of them in Poland?"
import { createInterface } from "node:readline/promises";
import { AdmitRunDocument, createClient, RunDocument } from "../sdk/index.js";

const url = process.env.DOSSIER_URL ?? "http://localhost:4000/graphql";
const apiKey = process.env.DOSSIER_API_KEY;
const dossier = createClient({ url, headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });

/** Asks one question in the conversation (a new one when it has no id yet) and streams the answer; returns the conversation's id. */
async function ask(question: string, conversationId: string | undefined): Promise<string> {
  const admitted = (await dossier.request(AdmitRunDocument, { input: { question, conversationId, multitask: "ENQUEUE" } })).admitRun;
  // Payloads are unions: narrow on __typename to reach the success or the typed error.
  if (admitted.__typename !== "AdmitRunSuccess") throw new Error(`the question was not admitted: ${admitted.__typename}: ${admitted.message}`);
  const runId = admitted.run.id;
  let printed = false;
  for await (const text of dossier.runOutput(runId)) {
    process.stdout.write(text);
    printed = true;
  }
  const run = (await dossier.request(RunDocument, { id: runId })).node;
  if (run?.__typename === "Run" && run.status !== "SUCCEEDED") {
    process.stdout.write(`${printed ? "\n" : ""}(the run ended ${run.status}${run.failureReason ? `: ${run.failureReason}` : ""})`);
  }
  process.stdout.write("\n\n");
  return admitted.run.conversation.id;
}

async function main(): Promise<number> {
  let conversationId: string | undefined;
  const given = process.argv.slice(2);
  if (given.length > 0) {
    for (const question of given) {
      console.log(`> ${question}`);
      conversationId = await ask(question, conversationId);
    }
    return 0;
  }
  const terminal = createInterface({ input: process.stdin, output: process.stdout });
  try {
    for (;;) {
      const question = (await terminal.question("> ").catch(() => "")).trim();
      if (!question) return 0;
      conversationId = await ask(question, conversationId);
    }
  } finally {
    terminal.close();
  }
}

main()
  .then(async (code) => {
    await dossier.close();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    await dossier.close();
    process.exit(1);
  });
