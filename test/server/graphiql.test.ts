// A5: GraphiQL at /graphql opens with example operations in tabs, every example is a valid
// operation against the current schema, and the page is served whole by Dossier (its behaviour
// in a browser: graphiql-browser.test.ts).
import { parse, validate } from "graphql";
import { describe, expect, it } from "vitest";
import { schema } from "../../src/graphql/schema.js";
import { graphiqlDefaultTabs } from "../../src/server/graphiql.js";
import { graphiqlStateVersion } from "../../src/server/graphiql-page.js";
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

  it("keeps a browser's tabs under a name that changes with the examples", () => {
    const options = { title: "Dossier", defaultTabs: graphiqlDefaultTabs };
    expect(graphiqlStateVersion({ ...options })).toBe(graphiqlStateVersion(options));
    const edited = graphiqlDefaultTabs.map((tab, i) => (i === 1 ? { ...tab, query: `${tab.query}\n# edited` } : tab));
    expect(graphiqlStateVersion({ ...options, defaultTabs: edited })).not.toBe(graphiqlStateVersion(options));
    expect(graphiqlStateVersion({ ...options, title: "Renamed" })).toBe(graphiqlStateVersion(options));
  });

  it("is served at /graphql to a browser whole, with the example tabs and WebSocket subscriptions", async () => {
    const t = await startTestApp("pglite");
    try {
      const response = await t.app.yoga.fetch(new Request("http://dossier.test/graphql", { headers: { accept: "text/html" } }));
      expect(response.status).toBe(200);
      const html = await response.text();
      expect(html).toContain("<title>Dossier</title>");
      for (const name of ["CreateWorkspace", "AdmitRun", "TraceUpdates", "HistoryCatalog", "ReadMaterial", "RunList", "UpdateRunTags"])
        expect(html).toContain(name);
      expect(html).toContain('"subscriptionsProtocol":"WS"');
      expect(html).toContain('"defaultTabs"');
      expect(html).toContain("traceUpdates(runId: $runId, afterSeq: $afterSeq)"); // variables survive templating
      // Script, style and icon are in the page: no element of it loads anything (the browser
      // test proves that the scripts request nothing from elsewhere either).
      const markup = html.replace(/<script>[\s\S]*?<\/script>/g, "<script></script>");
      expect(markup.match(/<script><\/script>/g)).toHaveLength(3); // the traceUpdates frames (graphiql-frames.ts), GraphiQL, the page's own
      expect(markup).not.toMatch(/\b(src|href)=(?!["']?data:)/i);
      expect(markup).toContain('<link rel="icon" href="data:image/svg+xml,');
      // The page is rendered once and served again as it was.
      const again = await t.app.yoga.fetch(new Request("http://dossier.test/graphql", { headers: { accept: "text/html" } }));
      expect(await again.text()).toBe(html);
    } finally {
      await t.close();
    }
  });

  it("answers /favicon.ico with Dossier's icon, for pages that link none", async () => {
    const t = await startTestApp("pglite", { authRequired: true });
    try {
      const response = await t.app.yoga.fetch(new Request("http://dossier.test/favicon.ico"));
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("image/svg+xml");
      expect(await response.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[\s\S]*<\/svg>$/);
    } finally {
      await t.close();
    }
  });
});
