// An HTTP MCP server, in a process of its own, that sends `pings` pings on its event stream as soon
// as it is opened and never answers the POSTs that carry the answers. It prints its port, then
// every 200 ms the POSTs it received, the sockets open now and the most ever open at once.
import { createServer } from "node:http";

const pings = Number(process.argv[2]);
let answers = 0;
let sockets = 0;
let most = 0;
let sent = 0;
const server = createServer((req, res) => {
  if (req.method === "GET") {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const pump = () => {
      while (sent < pings) {
        sent++;
        if (!res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id: 100_000 + sent, method: "ping" })}\n\n`)) return void res.once("drain", pump);
      }
    };
    setTimeout(pump, 200);
    return;
  }
  let body = "";
  req.on("data", (chunk) => (body += chunk));
  req.on("end", () => {
    const message = JSON.parse(body);
    const answer = (result) => {
      res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "s1" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
    };
    if (message.method === "initialize") {
      return answer({ protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "flood", version: "1" } });
    }
    if (message.method === "notifications/initialized") return void res.writeHead(202).end();
    if (message.method === "tools/list") return answer({ tools: [] });
    answers++;
  });
});
server.on("connection", (socket) => {
  sockets++;
  most = Math.max(most, sockets);
  socket.on("close", () => sockets--);
});
server.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
setInterval(() => console.log(`STATS ${JSON.stringify({ sent, answers, sockets, most })}`), 200);
