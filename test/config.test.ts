import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";

describe("loadConfig", () => {
  it("defaults to the embedded database in ./.data on port 4000", () => {
    expect(loadConfig({})).toEqual({
      port: 4000,
      host: "127.0.0.1",
      logLevel: "info",
      database: { kind: "pglite", dataDir: "./.data" },
    });
  });

  it("switches to PostgreSQL when DATABASE_URL is set, and treats empty variables as unset", () => {
    const config = loadConfig({ DATABASE_URL: "postgres://u@db:5432/dossier", PORT: "", DATA_DIR: "/x" });
    expect(config.database).toEqual({ kind: "postgres", url: "postgres://u@db:5432/dossier" });
    expect(config.port).toBe(4000);
  });

  it.each([
    [{ PORT: "70000" }, /PORT="70000": must be between 0 and 65535/],
    [{ PORT: "4.5" }, /PORT="4.5": must be a whole number/],
    [{ DATABASE_URL: "localhost:5432" }, /DATABASE_URL="localhost:5432": must be a PostgreSQL URL/],
  ])("rejects %o", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
