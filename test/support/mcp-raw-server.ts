// A stdio MCP server written without the SDK: its answers are exactly the JSON it writes, as a
// server with its own reading of the protocol may write them.
//   --redos-length <n>  how many "a"s the structured content of `redos` has before its "!" (27)
//   --bad-schema        also lists `unlistable`, whose output schema no JSON Schema library compiles
//   --odd-tools         also lists tools the protocol's schema refuses: `loose` (an input schema
//                       without a type; answers its arguments), `stringy` (an input schema of type
//                       "string"), `unkempt` (a description, annotations and icons of the wrong
//                       shape) and, fifth of the list, a tool without a name
//   --deep              also lists `deep`, whose structured content nests 20,000 lists deep (more
//                       than JSON.stringify follows): {"deep":[[[…]]]}
//   --deep-schema       also lists `deepschema`, whose input schema nests 20,000 levels deep
//   --many-tools <n>    also lists `bulk_0` … `bulk_<n-1>`, each with a description of 1,000 characters
//   --odd-names         also lists "nul\0tool" and "lone\ud800tool" (a NUL, an unpaired surrogate in
//                       the name), whose descriptions and input schemas hold both too
//   --big-tools <n>     also lists a tool whose name takes 1,000 characters, then `big_0` … `big_<n-1>`,
//                       each with a description of 20,000 characters and an input schema of 60,000
//                       characters as JSON; the listing comes in pages of 10 of these (the first page
//                       also holds the other tools)
//   --churn             lists `churn`, which sends `count` tools/list_changed notifications, the
//                       list changing before each; the list then holds `version_<changes so far>`
//                       and `listing_<tools/list requests answered, this one included>`
//   --failing           also lists `rpc_error` (answers a JSON-RPC error object whose message names an
//                       internal URL with a token and a file of the server), `hang_up` (exits while the
//                       call waits: the connection drops) and `refuse` (its own error result)
// Tools:
//   shaped      declares an output schema, answers text only
//   redos       answers text and structured content that its output schema's pattern `^(a+)+$`
//               takes exponential time to refuse
//   odd         a text block, then a block of a type the protocol does not have (`video`)
//   structured  structured content only, no content blocks
import { createInterface } from "node:readline";

const argv = process.argv.slice(2);
const at = argv.indexOf("--redos-length");
const redosLength = at >= 0 ? Number(argv[at + 1]) : 27;

const many = argv.indexOf("--many-tools");
const oddText = "odd \u0000 and \ud800 text";

const tools = [
  {
    name: "shaped",
    description: "Text only, though it declares an output schema.",
    inputSchema: { type: "object" },
    outputSchema: { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
  },
  {
    name: "redos",
    description: "Structured content against a catastrophic pattern.",
    inputSchema: { type: "object" },
    outputSchema: { type: "object", properties: { a: { type: "string", pattern: "^(a+)+$" } } },
  },
  { name: "odd", description: "A content block of a type the protocol does not have.", inputSchema: { type: "object" } },
  { name: "structured", description: "Structured content only.", inputSchema: { type: "object" } },
  ...(argv.includes("--bad-schema")
    ? [
        {
          name: "unlistable",
          description: "An output schema with an invalid pattern.",
          inputSchema: { type: "object" },
          outputSchema: { type: "object", properties: { a: { type: "string", pattern: "(" } } },
        },
      ]
    : []),
  ...(argv.includes("--deep") ? [{ name: "deep", description: "Structured content 20,000 levels deep.", inputSchema: { type: "object" } }] : []),
  ...Array.from({ length: many >= 0 ? Number(argv[many + 1]) : 0 }, (_, i) => ({
    name: `bulk_${i}`,
    description: `Bulk tool ${i}. `.padEnd(1_000, "x"),
    inputSchema: { type: "object", properties: { q: { type: "string" } } },
  })),
  ...(argv.includes("--odd-names")
    ? ["nul\u0000tool", "lone\ud800tool"].map((name) => ({
        name,
        description: `The tool ${name}: ${oddText}.`,
        inputSchema: { type: "object", properties: { q: { type: "string", description: oddText } } },
      }))
    : []),
  ...(argv.includes("--odd-tools")
    ? [
        { name: "loose", description: "An input schema without a type.", inputSchema: { properties: { q: { type: "string" } } } },
        { description: "A tool without a name.", inputSchema: { type: "object" } },
        { name: "stringy", description: "An input schema of type string.", inputSchema: { type: "string" } },
        { name: "unkempt", description: 42, annotations: "none", icons: 5, inputSchema: { type: "object", properties: { n: { type: "number" } } } },
      ]
    : []),
  ...(argv.includes("--failing")
    ? ["rpc_error", "hang_up", "refuse"].map((name) => ({ name, description: `Fails: ${name}.`, inputSchema: { type: "object" } }))
    : []),
];

/** The JSON-RPC error `rpc_error` answers: what a server's internals may put in one (test/runtime/mcp-call-failures.test.ts). */
const RPC_ERROR_MESSAGE = "upstream http://search.internal.example:9200/index?token=SECRET-TOKEN-42 refused at /srv/search/app.js:12";

const big = argv.indexOf("--big-tools");
const bigTools = [
  { name: "n".repeat(1_000), description: "A name too long to keep.", inputSchema: { type: "object" } },
  ...Array.from({ length: big >= 0 ? Number(argv[big + 1]) : 0 }, (_, i) => {
    const name = `big_${i}`;
    const property = { type: "string", description: "" };
    const schema = { type: "object", properties: { q: property } };
    property.description = "s".repeat(60_000 - JSON.stringify(schema).length);
    return { name, description: `Big tool ${i}. `.padEnd(20_000, "d"), inputSchema: schema };
  }),
];
/** The page of `--big-tools` a cursor asks for: the first (cursor absent) holds the other tools too. */
function bigPage(cursor: string | undefined): { tools: unknown[]; nextCursor?: string } {
  const at = Number(cursor ?? 0);
  const next = at + 10 < bigTools.length ? String(at + 10) : undefined;
  return { tools: [...(at === 0 ? tools : []), ...bigTools.slice(at, at + 10)], ...(next ? { nextCursor: next } : {}) };
}

/** 20,000 lists, one in the other. */
const DEEP = "[".repeat(20_000) + "]".repeat(20_000);
/** `deepschema`, written as text: 20,000 schemas, each the only property of the one around it. */
const DEEP_SCHEMA_TOOL = `{"name":"deepschema","description":"An input schema 20,000 levels deep.","inputSchema":{"type":"object","properties":{"q":${'{"type":"object","properties":{"q":'.repeat(20_000)}{}${"}}".repeat(20_000)}}}}`;

let version = 0;
let listings = 0;
const churn = argv.includes("--churn");
const churnTools = () => [
  { name: "churn", description: "Changes the tool list `count` times, saying so each time.", inputSchema: { type: "object" } },
  { name: `version_${version}`, description: "The tool list as of this change.", inputSchema: { type: "object" } },
  { name: `listing_${listings}`, description: "How many listings the server has answered.", inputSchema: { type: "object" } },
];

const results: Record<string, unknown> = {
  shaped: { content: [{ type: "text", text: "shaped: the text the tool returned" }] },
  redos: { content: [{ type: "text", text: "redos: the text the tool returned" }], structuredContent: { a: `${"a".repeat(redosLength)}!` } },
  odd: {
    content: [
      { type: "text", text: "odd: the text block" },
      { type: "video", uri: "file:///clip.mp4", mimeType: "video/mp4" },
    ],
  },
  structured: { structuredContent: { count: 3 } },
  unlistable: { content: [{ type: "text", text: "unlistable: answered" }], structuredContent: { a: "x" } },
};

function call(name: string, args: { count?: number }): unknown {
  const text = (value: string) => ({ content: [{ type: "text", text: value }] });
  if (name === "churn") {
    for (let i = 0; i < (args.count ?? 1); i += 1) {
      version += 1;
      send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
    }
    return text(`churn: the list changed ${args.count ?? 1} times`);
  }
  if (/^(version|listing|bulk|big)_\d+$/.test(name) || ["stringy", "unkempt", "nul\u0000tool", "lone\ud800tool"].includes(name))
    return text(`${name}: answered`);
  if (name === "loose") return text(`loose: answered ${JSON.stringify(args)}`);
  return results[name] ?? { content: [], isError: true };
}

const send = (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`);
createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line) as {
    id?: number | string;
    method?: string;
    params?: { name?: string; protocolVersion?: string; arguments?: { count?: number }; cursor?: string };
  };
  if (message.id === undefined) return;
  const reply = (result: unknown) => send({ jsonrpc: "2.0", id: message.id, result });
  if (message.method === "initialize")
    reply({ protocolVersion: message.params?.protocolVersion, capabilities: { tools: { listChanged: churn } }, serverInfo: { name: "raw", version: "1.0.0" } });
  else if (message.method === "tools/list" && big >= 0) reply(bigPage(message.params?.cursor));
  else if (message.method === "tools/list") {
    listings += 1;
    const listed = JSON.stringify(churn ? churnTools() : tools);
    const withDeep = argv.includes("--deep-schema") ? `${listed.slice(0, -1)},${DEEP_SCHEMA_TOOL}]` : listed;
    process.stdout.write(`{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"tools":${withDeep}}}\n`);
  } else if (message.method === "tools/call" && message.params?.name === "deep") {
    // Written as text: JSON.stringify could not write it.
    process.stdout.write(`{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"structuredContent":{"deep":${DEEP}}}}\n`);
  } else if (message.method === "tools/call" && message.params?.name === "rpc_error") {
    send({ jsonrpc: "2.0", id: message.id, error: { code: -32603, message: RPC_ERROR_MESSAGE } });
  } else if (message.method === "tools/call" && message.params?.name === "hang_up") process.exit(3);
  else if (message.method === "tools/call" && message.params?.name === "refuse") {
    reply({ content: [{ type: "text", text: "refuse: the quota of this key is spent" }], isError: true });
  } else if (message.method === "tools/call") reply(call(message.params?.name ?? "", message.params?.arguments ?? {}));
  else reply({});
});
process.stdin.on("end", () => process.exit(0));
