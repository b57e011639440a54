// Sets or clears a principal's own daily cost limit, overriding DAILY_COST_LIMIT for it:
//   npm run limits:set -- --principal <id> --daily-cost 25.00
//   npm run limits:set -- --principal <id> --daily-cost none     (back to DAILY_COST_LIMIT)
// <id> is the principal's global id (Principal.id, as key:create prints it) or its database id.
// A running server applies it from its runs' next model request.
import { costLimit } from "../src/domain/costs/caps.js";
import { idOfType } from "../src/domain/global-id.js";
import { fail, parsedArgs, withOperatorDatabase } from "./operator-database.js";

const USAGE = "usage: npm run limits:set -- --principal <id> --daily-cost <USD, e.g. 25.00 | none>";
const { values } = parsedArgs({ options: { principal: { type: "string" }, "daily-cost": { type: "string" } } }, USAGE);
const given = values.principal;
const daily = values["daily-cost"];
if (!given || daily === undefined) fail(USAGE);
const parsed = daily === "none" ? null : costLimit.safeParse(daily);
if (parsed && !parsed.success) fail(`--daily-cost ${parsed.error.issues[0]?.message ?? "is not a decimal amount"} (or none to clear it)`);
const limit = parsed ? parsed.data! : null;
const principalId = idOfType(given!, "Principal") ?? given!;

await withOperatorDatabase("then start the server again", async (db, config) => {
  const updated = await db.prisma.principal.updateMany({ where: { id: principalId }, data: { dailyCostLimit: limit } });
  if (updated.count === 0) fail(`No principal has the id ${given}.`);
  const fallback = config.dailyCostLimit ? `DAILY_COST_LIMIT (${config.dailyCostLimit} USD)` : "no daily limit (DAILY_COST_LIMIT is not set)";
  process.stdout.write(limit === null ? `Principal ${given} is back to ${fallback}.\n` : `Principal ${given} may spend ${limit} USD a UTC day.\n`);
});
