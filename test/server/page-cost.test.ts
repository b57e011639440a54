// The request cost model (server/page-cost.ts) against the schema itself: every documented read
// fits the default limit, every connection says its page sizes, and pages nested in pages, a
// trace's bound and a union's branches count as the response they can produce.
import { readdirSync, readFileSync } from "node:fs";
import {
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  getNamedType,
  isLeafType,
  isObjectType,
  Kind,
  type OperationDefinitionNode,
  parse,
  typeFromAST,
} from "graphql";
import { describe, expect, it } from "vitest";
import { LIST_ITEMS, PAGE_SIZES, type PageSizes } from "../../src/graphql/list-connection.js";
import { schema } from "../../src/graphql/schema.js";
import { DEFAULT_QUERY_LIMITS } from "../../src/server/hardening.js";
import { MAX_VISITS, operationCost, requestCost } from "../../src/server/page-cost.js";
import { MORE_EVENTS, MORE_SPANS, RUN_QUERY, TRACE_QUERY } from "../../src/trace/viewer/viewer-documents.js";

const traceRecords = DEFAULT_QUERY_LIMITS.traceRecords!;
const limits = { maxPageSize: DEFAULT_QUERY_LIMITS.maxPageSize, traceRecords };

function costOf(text: string, variables: Record<string, unknown> = {}) {
  const document = parse(text);
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const operations = document.definitions.filter((definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION);
  return operations.map((operation) => ({ name: operation.name?.value, ...operationCost(schema, operation, fragments, variables, limits) }));
}

/** Every object type's connection fields: those whose type has edges and pageInfo. */
function connectionFields(): string[] {
  const found: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith("__")) continue;
    for (const field of Object.values(type.getFields())) {
      const named = getNamedType(field.type);
      if (isObjectType(named) && named.getFields().edges && named.getFields().pageInfo) found.push(`${type.name}.${field.name}`);
    }
  }
  return found;
}

describe("request cost", () => {
  it("every connection states its page sizes, so a page it is not asked a size for counts as its default", () => {
    const fields = connectionFields();
    expect(fields.length).toBeGreaterThan(30);
    const without = fields.filter((path) => {
      const [type, field] = path.split(".") as [string, string];
      return !(schema.getType(type) as GraphQLObjectType).getFields()[field]!.extensions?.[PAGE_SIZES];
    });
    expect(without).toEqual([]);
  });

  it("every SDK operation, at the server's default pages, is within the default limit", () => {
    const texts = readdirSync("sdk/operations").map((file) => readFileSync(`sdk/operations/${file}`, "utf8"));
    const document = parse(texts.join("\n"));
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    const costs: { name?: string; cost: number }[] = [];
    for (const definition of document.definitions) {
      if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
      // Required variables get a value; page sizes left out take the list's default.
      const variables: Record<string, unknown> = {};
      for (const variable of definition.variableDefinitions ?? []) {
        if (variable.type.kind !== Kind.NON_NULL_TYPE) continue;
        const type = getNamedType(typeFromAST(schema, variable.type as never)!).name;
        variables[variable.variable.name.value] = type === "Int" ? 20 : type === "Boolean" ? true : "x";
      }
      const { cost, refusal } = operationCost(schema, definition, fragments, variables, limits);
      expect(refusal).toBeUndefined();
      costs.push({ name: definition.name?.value, cost });
    }
    expect(costs.length).toBeGreaterThan(100);
    expect(costs.filter(({ cost }) => cost > DEFAULT_QUERY_LIMITS.maxCost)).toEqual([]);
    // The trace, read a page of spans with a page of events each, is the costliest and counts its events.
    expect(costs.find(({ name }) => name === "RunTrace")!.cost).toBeGreaterThan(10_000);
  });

  it("the trace viewer's documents, at the page the viewer asks for, are within the default limit", () => {
    for (const text of [RUN_QUERY, TRACE_QUERY, MORE_SPANS, MORE_EVENTS]) {
      const [{ cost, refusal }] = costOf(text, { id: "x", first: 100 }) as unknown as [{ cost: number; refusal?: unknown }];
      expect(refusal).toBeUndefined();
      expect(cost).toBeLessThanOrEqual(DEFAULT_QUERY_LIMITS.maxCost);
    }
  });

  it("every root list at its largest page, with every field of its items that takes no arguments, is within the default limit", () => {
    const query = schema.getQueryType()!;
    const checked: string[] = [];
    for (const field of Object.values(query.getFields())) {
      const sizes = field.extensions?.[PAGE_SIZES] as PageSizes | undefined;
      if (!sizes) continue;
      const node = getNamedType((getNamedType(field.type) as GraphQLObjectType).getFields().edges!.type) as GraphQLObjectType;
      const item = getNamedType(node.getFields().node!.type) as GraphQLObjectType;
      const scalars = Object.values(item.getFields()).filter((each) => isLeafType(getNamedType(each.type)) && each.args.length === 0);
      const max = sizes.listMax ? sizes.maxSize : DEFAULT_QUERY_LIMITS.maxPageSize;
      const required = field.args.filter((arg) => arg.type.toString().endsWith("!") && arg.defaultValue === undefined);
      const args = [`first: ${max}`, ...required.map((arg) => `${arg.name}: "x"`)].join(", ");
      const text = `{ ${field.name}(${args}) { edges { cursor node { ${scalars.map((each) => each.name).join(" ")} } } pageInfo { hasNextPage endCursor } } }`;
      const [{ cost, refusal }] = costOf(text) as unknown as [{ cost: number; refusal?: unknown }];
      expect(refusal, text).toBeUndefined();
      expect(cost, text).toBeLessThanOrEqual(DEFAULT_QUERY_LIMITS.maxCost);
      checked.push(field.name);
    }
    expect(checked).toEqual(expect.arrayContaining(["workspaces", "runs", "conversations"]));
  });

  it("pages nested in pages multiply, whether their sizes are inline, variables or variables' defaults", () => {
    const nested = (page: string) => `conversations(first: ${page}) { edges { node { runs(first: ${page}) { edges { node { id } } } } } }`;
    // conversations, its edges, 100 × (node, runs, runs' edges), 100 × 100 × (node, id)
    const expected = 1 + 1 + 3 * 100 + 2 * 100 * 100;
    expect(costOf(`{ ${nested("100")} }`)[0]!.cost).toBe(expected);
    expect(costOf(`query ($n: Int) { ${nested("$n")} }`, { n: 100 })[0]!.cost).toBe(expected);
    // A page larger than the connection serves (100 of conversations) counts as what it serves.
    expect(costOf(`query ($n: Int) { ${nested("$n")} }`, { n: 150 })[0]).toEqual({ cost: expected, refusal: undefined });
  });

  it("a trace's spans and events count at most the trace's records, and every trace counts", () => {
    const trace = `trace { ... on Trace { spans(first: 1000) { edges { node { events(first: 1000) { edges { node { id } } } } } } } }`;
    const one = costOf(`{ run(id: "x") { ${trace} } }`)[0]!.cost;
    // Without the bound: 1,000 spans × 1,000 events; with it, both lists are held to 50,000 items.
    expect(one).toBeLessThan(4 * traceRecords * 2);
    expect(one).toBeGreaterThan(DEFAULT_QUERY_LIMITS.maxCost);
    const many = costOf(`{ runs(first: 100) { edges { node { ${trace} } } } }`)[0]!.cost;
    expect(many).toBeGreaterThan(50 * one);
  });

  it("fragments on the types of a union count as its costliest branch, not their sum", () => {
    const spans = "spans(first: 100) { edges { node { id } } }";
    const both = costOf(`{ run(id: "x") { trace { ... on Trace { ${spans} } ... on TraceExpiredError { summary { ${spans} } } } } }`)[0]!.cost;
    const traceOnly = costOf(`{ run(id: "x") { trace { ... on Trace { ${spans} } } } }`)[0]!.cost;
    expect(both - traceOnly).toBeLessThan(10);
  });

  it("a document sent again is costed by the page sizes it passes this time, its defaults and nulls apart", () => {
    const document = parse(
      "query ($n: Int, $m: Int = 100, $q: String) { conversations(first: $n) { edges { node { runs(first: $m) { edges { node { id } } } } } } }",
    );
    const cost = (variables: Record<string, unknown>) => requestCost(schema, document, undefined, variables, limits)!.cost;
    const large = cost({ n: 100 });
    expect(cost({ n: 2, m: 2 })).toBe(1 + 1 + 3 * 2 + 2 * 2 * 2);
    expect(cost({ n: 100, q: "x" })).toBe(large);
    expect(cost({ n: 2, m: 2, q: "y" })).toBe(cost({ n: 2, m: 2 }));
    // m unset takes its default (100); m null asks for the list's default page (20 runs).
    expect(cost({ n: 2 })).toBe(1 + 1 + 3 * 2 + 2 * 2 * 100);
    expect(cost({ n: 2, m: null })).toBe(1 + 1 + 3 * 2 + 2 * 2 * 20);
    expect(requestCost(schema, document, undefined, { n: "two" }, limits)).toBeUndefined();
  });

  it("what @skip or @include leaves out is not counted, and a document sent again is costed by its flags this time", () => {
    const runs = "runs(first: 100) { edges { node { id } } }";
    const plain = costOf(`{ viewer { name } }`)[0]!.cost;
    const full = costOf(`{ viewer { name } ${runs} }`)[0]!.cost;
    expect(full).toBeGreaterThan(plain + 200);
    expect(costOf(`{ viewer { name } ${runs.replace("100)", "100) @skip(if: true)")} }`)[0]!.cost).toBe(plain);
    expect(costOf(`{ viewer { name } ... @include(if: false) { ${runs} } }`)[0]!.cost).toBe(plain);
    expect(costOf(`{ viewer { name } ... on Query @skip(if: false) { ${runs} } }`)[0]!.cost).toBe(full);
    // A named fragment left out, and the same document sent with the flag set and then unset.
    const document = parse(`query ($all: Boolean!) { viewer { name } ...Runs @include(if: $all) } fragment Runs on Query { ${runs} }`);
    const cost = (all: boolean) => requestCost(schema, document, undefined, { all }, limits)!.cost;
    expect([cost(false), cost(true), cost(false)]).toEqual([plain, full, plain]);
  });

  it("fragments on several interfaces and unions that name one type count together for that type", () => {
    const runs = "runs(first: 100) { edges { node { id status } } }";
    const copies = (n: number) => Array.from({ length: n }, (_, i) => `c${i}: conversation { ${runs} }`).join(" ");
    const onRun = costOf(`query ($id: ID!) { node(id: $id) { ... on Run { ${copies(3)} } } }`, { id: "x" })[0]!.cost;
    // The same three copies, each through another abstract type Run belongs to.
    const spread = costOf(
      `query ($id: ID!) { node(id: $id) { ... on Run { c0: conversation { ${runs} } } ... on Node { ... on Run { c1: conversation { ${runs} } } } ... on ScoreTarget { ... on Run { c2: conversation { ${runs} } } } } }`,
      { id: "x" },
    )[0]!.cost;
    expect(spread).toBe(onRun);
    // Another type's fragment counts on its own: an object is of one type.
    const apart = costOf(`query ($id: ID!) { node(id: $id) { ... on Run { ${copies(3)} } ... on Conversation { id } } }`, { id: "x" })[0]!.cost;
    expect(apart).toBe(onRun);
  });

  it("a document whose fragments take too many fields to cost counts as more than any limit", () => {
    // Each named fragment selects the next twice: 2^14 copies of the last level, from a short document.
    const levels = 14;
    const fragments = Array.from({ length: levels }, (_, level) =>
      level + 1 < levels
        ? `fragment F${level} on Run { a: conversation { runs(first: 1) { edges { node { ...F${level + 1} } } } } b: conversation { runs(first: 2) { edges { node { ...F${level + 1} } } } } }`
        : `fragment F${level} on Run { id }`,
    );
    const [{ cost }] = costOf(`{ run(id: "x") { ...F0 } } ${fragments.join(" ")}`) as unknown as [{ cost: number }];
    expect(cost).toBe(Number.POSITIVE_INFINITY);
    // Six levels take far fewer fields than MAX_VISITS to cost: counted.
    const short = fragments.slice(0, 6).map((text, level) => (level === 5 ? "fragment F5 on Run { id }" : text));
    const [{ cost: counted }] = costOf(`{ run(id: "x") { ...F0 } } ${short.join(" ")}`) as unknown as [{ cost: number }];
    expect(Number.isFinite(counted)).toBe(true);
    expect(MAX_VISITS).toBeLessThan(2 ** levels * 5);
  });

  it("every list of objects without pages states the most items it holds, but those a parent's page sizes", () => {
    const pagedByParent = ["HistoryCatalogConnection.entries", "SearchHistorySuccess.hits", "Workspace.checkpointVersions"];
    const unstated: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (!isObjectType(type) || type.name.startsWith("__")) continue;
      for (const field of Object.values(type.getFields())) {
        const named = getNamedType(field.type);
        if (field.name === "edges" || isLeafType(named) || !field.type.toString().includes("[")) continue;
        if (!field.extensions?.[LIST_ITEMS] && !pagedByParent.includes(`${type.name}.${field.name}`)) unstated.push(`${type.name}.${field.name}`);
      }
    }
    expect(unstated).toEqual([]);
  });
});
