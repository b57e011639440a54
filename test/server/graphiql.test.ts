// A5: GraphiQL at /graphql opens with example operations in tabs, and every example is a valid
// operation against the current schema.
import { parse, validate } from "graphql";
import { describe, expect, it } from "vitest";
import { schema } from "../../src/graphql/schema.js";
import { graphiqlDefaultTabs } from "../../src/server/graphiql.js";
import { startTestApp } from "../support/test-app.js";

describe("GraphiQL", () => {
  it("every example operation validates against the schema, and every root kind is shown", () => {
    const kinds = new Set<string>();
    for (const tab of graphiqlDefaultTabs) {
      const document = parse(tab.query);
      expect(validate(schema, document).map((e) => e.message)).toEqual([]);
      for (const def of document.definitions) if (def.kind === "OperationDefinition") kinds.add(def.operation);
      if (tab.variables) expect(() => JSON.parse(tab.variables!)).not.toThrow();
    }
    expect([...kinds].sort()).toEqual(["mutation", "query", "subscription"]);
  });

  it("is served at /graphql to a browser with the example tabs and WebSocket subscriptions", async () => {
    const t = await startTestApp("pglite");
    try {
      const response = await t.app.yoga.fetch(new Request("http://dossier.test/graphql", { headers: { accept: "text/html" } }));
      expect(response.status).toBe(200);
      const html = await response.text();
      expect(html).toContain("<title>Dossier</title>");
      for (const name of ["CreateWorkspace", "AdmitRun", "TraceUpdates", "HistoryCatalog", "ReadMaterial"]) expect(html).toContain(name);
      expect(html).toContain('"subscriptionsProtocol":"WS"');
      expect(html).toContain('"defaultTabs"');
      expect(html).toContain("traceUpdates(runId: $runId, afterSeq: $afterSeq)"); // variables survive templating
    } finally {
      await t.close();
    }
  });
});
