// Sets or replaces the operator's model prices (USD per million tokens), which price every
// principal's calls that have no entry of their own:
//   npm run prices:set -- --model gpt-4o-mini --input 0.15 --cached-input 0.075 --output 0.60 [--reasoning 0.60] [--cache-write 0.15] [--effective-from 2026-01-01T00:00:00Z]
//   npm run prices:set -- --file prices.json      (the MODEL_PRICES_FILE format)
// An entry without an effective time is effective from now (from the file: from the epoch, as at start).
import { readModelPrices } from "../src/compose/price-file.js";
import { parsePriceEntry, type PriceEntry, setOperatorPrices } from "../src/domain/costs/price-entries.js";
import { fail, parsedArgs, withOperatorDatabase } from "./operator-database.js";

const USAGE =
  "usage: npm run prices:set -- --model <name> --input <USD per million> --output <USD per million> [--cached-input <p>] [--cache-write <p>] [--reasoning <p>] [--effective-from <ISO time>]\n" +
  "   or: npm run prices:set -- --file <prices.json>";

const { values } = parsedArgs(
  {
    options: {
      file: { type: "string" },
      model: { type: "string" },
      input: { type: "string" },
      "cached-input": { type: "string" },
      "cache-write": { type: "string" },
      output: { type: "string" },
      reasoning: { type: "string" },
      "effective-from": { type: "string" },
    },
  },
  USAGE,
);

function entriesOf(): PriceEntry[] {
  if (values.file) return readModelPrices(values.file, "--file");
  if (!values.model || values.input === undefined || values.output === undefined) return fail(USAGE);
  return [
    parsePriceEntry({
      model: values.model,
      effectiveFrom: values["effective-from"],
      inputPerMillion: values.input,
      cachedInputPerMillion: values["cached-input"],
      cacheWritePerMillion: values["cache-write"],
      outputPerMillion: values.output,
      reasoningPerMillion: values.reasoning,
    }),
  ];
}

await withOperatorDatabase("or give the server the entries in MODEL_PRICES_FILE and restart it", async (db) => {
  const set = await setOperatorPrices(db.prisma, entriesOf(), new Date());
  for (const price of set) {
    process.stdout.write(
      `${price.model} from ${price.effectiveFrom.toISOString()}: input ${price.inputPerMillion}, cached input ${price.cachedInputPerMillion ?? "(input)"}, ` +
        `cache write ${price.cacheWritePerMillion ?? "(input)"}, output ${price.outputPerMillion}, reasoning ${price.reasoningPerMillion ?? "(output)"} USD per million tokens\n`,
    );
  }
});
