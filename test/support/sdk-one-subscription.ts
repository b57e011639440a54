// A Node.js program using the SDK: one subscription (runOutput of a run that does not exist, which
// ends at once with "Run not found") over the graphql-ws socket, then `close()` unless told not
// to, then nothing: the process should exit on its own. Prints when the subscription ended.
//   node --import tsx test/support/sdk-one-subscription.ts <url> [--no-close] [--idle <ms>]
import { createClient } from "../../sdk/client.js";
import { RunOutputDocument } from "../../sdk/generated/graphql.js";
import { encodeGlobalId } from "../../src/domain/global-id.js";

const [url, ...flags] = process.argv.slice(2);
const idle = flags.includes("--idle") ? Number(flags[flags.indexOf("--idle") + 1]) : undefined;
const client = createClient({ url: url!, ...(idle !== undefined && { socketIdleMs: idle }) });
try {
  for await (const _ of client.subscribe(RunOutputDocument, { runId: encodeGlobalId("Run", crypto.randomUUID()) })) {
    // No update comes for a run that is not there.
  }
} catch (error) {
  console.log(`ended: ${(error as Error).message}`);
}
if (!flags.includes("--no-close")) await client.close();
