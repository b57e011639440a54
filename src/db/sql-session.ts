// A minimal SQL session over one connection, shared by the migration runner and the
// readiness check so that both backends (PGlite and PostgreSQL) take the same code path.
import type { PGlite } from "@electric-sql/pglite";
import type pg from "pg";

export interface SqlSession {
  /** One parameterised statement. */
  query<Row extends Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  /** A script of several statements, sent as one simple-protocol message. */
  exec(script: string): Promise<void>;
}

export function pgliteSession(db: PGlite): SqlSession {
  return {
    async query<Row extends Record<string, unknown>>(sql: string, params: unknown[] = []) {
      const result = await db.query<Row>(sql, params);
      return result.rows;
    },
    async exec(script) {
      await db.exec(script);
    },
  };
}

export function pgSession(client: pg.ClientBase): SqlSession {
  return {
    async query<Row extends Record<string, unknown>>(sql: string, params: unknown[] = []) {
      const result = await client.query<Row>(sql, params);
      return result.rows;
    },
    async exec(script) {
      await client.query(script);
    },
  };
}
