// A stdio MCP server written without the SDK: its answers are exactly the JSON it writes, as a
// server with its own reading of the protocol may write them.
//   --redos-length <n>  how many "a"s the structured content of `redos` has before its "!" (27)
//   --bad-schema        also lists `unlistable`, whose output schema no JSON Schema library compiles
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

const send = (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`);
createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line) as { id?: number | string; method?: string; params?: { name?: string; protocolVersion?: string } };
  if (message.id === undefined) return;
  const reply = (result: unknown) => send({ jsonrpc: "2.0", id: message.id, result });
  if (message.method === "initialize")
    reply({ protocolVersion: message.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "raw", version: "1.0.0" } });
  else if (message.method === "tools/list") reply({ tools });
  else if (message.method === "tools/call") reply(results[message.params?.name ?? ""] ?? { content: [], isError: true });
  else reply({});
});
process.stdin.on("end", () => process.exit(0));
