// The Prisma client's statements on the embedded database, each as one call into PGlite and
// planned once. PGlite's own `query` sends Parse, Describe, Bind, Describe, Execute and Sync as six
// calls into its WebAssembly PostgreSQL and plans the statement anew every time: for a workspace
// read that planning was most of the database's work (the workspace with its goal, 1.5 ms a
// statement, against 0.3 ms once prepared). Here each statement text the client sends is prepared
// once under a name of its own (PostgreSQL keeps its plan and replans it when a table or its
// statistics change), and each execution is Bind, Describe, Execute and Sync in a single call.
// Values are serialised, and results parsed, by PGlite's own serialisers and parsers, as `query` does;
// the reply's bytes are read by pglite-wire.ts.
import { type PGlite, protocol, type QueryOptions, type Results, type Transaction } from "@electric-sql/pglite";
import { exchange, type Reply } from "./pglite-wire.js";

/**
 * How many statement texts stay prepared: the Prisma client sends a few dozen distinct ones in
 * steady use; each kept plan holds memory in PGlite's heap, which never shrinks.
 */
const KEPT_STATEMENTS = 64;

type Prepared = { name: string; parameterTypes: number[] };

const { serialize } = protocol;

/** feature_not_supported ("cached plan must not change result type"), invalid_sql_statement_name. */
const STALE_STATEMENT = new Set(["0A000", "26000"]);

/**
 * `pglite` whose `query`, and its transactions' `query`, run prepared statements as above;
 * everything else is `pglite`'s own. For the Prisma client's adapter only: statements that
 * need PGlite's own path (scripts, `exec`) still take it.
 */
export function preparingStatements(pglite: PGlite): PGlite {
  const prepared = new Map<string, Prepared>();
  let named = 0;

  /** Runs `sql` with `params` on the connection, which the caller holds. */
  async function run<T>(sql: string, params: readonly unknown[], options: QueryOptions | undefined): Promise<Results<T>> {
    let statement = prepared.get(sql);
    if (statement) {
      // Most recently used last: the first entry is the one to let go.
      prepared.delete(sql);
      prepared.set(sql, statement);
    } else {
      statement = await prepare(sql, options);
    }
    const values = params.map((value, index) => serialised(value, statement.parameterTypes[index], options));
    try {
      const reply = await exchange(
        pglite,
        concat([serialize.bind({ statement: statement.name, values }), serialize.describe({ type: "P" }), serialize.execute({}), serialize.sync()]),
      );
      return results<T>(reply, options);
    } catch (error) {
      // A table whose columns changed since (a migration) or a statement gone from the session:
      // the next call prepares the text anew.
      if (STALE_STATEMENT.has((error as { code?: unknown }).code as string)) prepared.delete(sql);
      throw error;
    }
  }

  async function prepare(sql: string, options: QueryOptions | undefined): Promise<Prepared> {
    const name = `dossier_${(named += 1)}`;
    const reply = await exchange(
      pglite,
      concat([serialize.parse({ name, text: sql, types: options?.paramTypes }), serialize.describe({ type: "S", name }), serialize.sync()]),
    );
    const statement = { name, parameterTypes: reply.parameterTypes };
    prepared.set(sql, statement);
    if (prepared.size > KEPT_STATEMENTS) {
      const [oldest, { name: closed }] = prepared.entries().next().value as [string, Prepared];
      prepared.delete(oldest);
      await exchange(pglite, concat([serialize.close({ type: "S", name: closed }), serialize.sync()]));
    }
    return statement;
  }

  function serialised(value: unknown, type: number | undefined, options: QueryOptions | undefined): string | null {
    if (value === null || value === undefined) return null;
    const serializer = type === undefined ? undefined : (options?.serializers?.[type] ?? pglite.serializers[type]);
    return serializer ? serializer(value) : String(value);
  }

  function results<T>({ fields, rows, commandTags }: Reply, options: QueryOptions | undefined): Results<T> {
    // One loop over the values, each row made at once (a row used to make three arrays on top
    // of its object: a tenth fewer young-generation collections per typical workspace read's statement).
    const count = fields.length;
    // Assigned, "__proto__" would set the row's prototype: it is defined as a property of its own, as Object.fromEntries does.
    const own = fields.some(({ name }) => name === "__proto__");
    const parse = new Array<((value: string, typeId?: number) => unknown) | undefined>(count);
    for (let column = 0; column < count; column++) parse[column] = options?.parsers?.[fields[column]!.dataTypeID] ?? pglite.parsers[fields[column]!.dataTypeID];
    const arrays = options?.rowMode === "array";
    const parsed = new Array<unknown>(rows.length);
    for (let index = 0; index < rows.length; index++) {
      const row = rows[index]!;
      const made: Record<string, unknown> | unknown[] = arrays ? row : {};
      for (let column = 0; column < count; column++) {
        const text = row[column] as string | null;
        const value = text === null || !parse[column] ? text : parse[column]!(text, fields[column]!.dataTypeID);
        if (arrays) (made as unknown[])[column] = value;
        else if (own) Object.defineProperty(made, fields[column]!.name, { value, enumerable: true, writable: true, configurable: true });
        else (made as Record<string, unknown>)[fields[column]!.name] = value;
      }
      parsed[index] = made;
    }
    let affectedRows = 0;
    let rowCount: number | undefined;
    for (const tag of commandTags) {
      const words = tag.split(" ");
      const count = Number.parseInt(words[words.length - 1]!, 10);
      if (["INSERT", "UPDATE", "DELETE", "COPY", "MERGE"].includes(words[0]!)) affectedRows += count;
      if (!Number.isNaN(count)) rowCount = count;
    }
    return { rows: parsed as T[], fields, affectedRows, ...(rowCount === undefined ? {} : { rowCount }) };
  }

  /** A transaction whose `query` runs prepared statements; the transaction holds the connection already. */
  const preparingIn = (tx: Transaction): Transaction =>
    new Proxy(tx, {
      get(target, key) {
        if (key !== "query") return Reflect.get(target, key, target);
        return <T>(sql: string, params: unknown[] = [], options?: QueryOptions) => {
          if (target.closed) throw new Error("Transaction is closed");
          return pglite.runExclusive(() => run<T>(sql, params, options));
        };
      },
    });

  return new Proxy(pglite, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (key === "query") {
        return async <T>(sql: string, params: unknown[] = [], options?: QueryOptions) => {
          await target._checkReady();
          // As PGlite's own `query`: after any open transaction, then alone on the connection.
          return target._runExclusiveTransaction(() =>
            target.runExclusive(async () => {
              const result = await run<T>(sql, params, options);
              await target.syncToFs();
              return result;
            }),
          );
        };
      }
      if (key === "transaction") {
        return <T>(callback: (tx: Transaction) => Promise<T>) => target.transaction((tx) => callback(preparingIn(tx)));
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function concat(parts: Uint8Array[]): Uint8Array {
  const joined = new Uint8Array(parts.reduce((length, part) => length + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}
