// R15: http_fetch reaches allow-listed hosts only (redirects included), within a size and a time limit.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolError } from "../../src/runtime/ports/tool.js";
import { hostAllowed, isInternalAddress, literalAddressRefusal } from "../../src/domain/capabilities/outbound-policy.js";
import { createHttpFetchTool } from "../../src/runtime/tools/http-fetch.js";
import { toolContext } from "../support/tool-context.js";
import { allowTimeFor } from "../support/wait.js";

describe("http_fetch", () => {
  let server: Server;
  let port = 0;
  let bytesSent = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/page") return res.end("<h1>Capacity 2027</h1>");
      if (req.url === "/json") {
        res.setHeader("content-type", "application/json");
        return res.end('{"gwh":42}');
      }
      if (req.url === "/big") {
        // 5 MB in 64 KB chunks, counting what actually leaves the server.
        res.setHeader("content-type", "text/plain");
        const chunk = Buffer.alloc(64 * 1024, "a");
        let sent = 0;
        const write = () => {
          while (sent < 80) {
            sent += 1;
            bytesSent += chunk.length;
            if (!res.write(chunk)) return void res.once("drain", write);
          }
          res.end();
        };
        return write();
      }
      if (req.url === "/slow") return void setTimeout(() => res.end("late"), 3_000);
      if (req.url === "/redirect-out") {
        res.writeHead(302, { location: "http://localhost:1/elsewhere" });
        return res.end();
      }
      if (req.url === "/redirect-in") {
        res.writeHead(302, { location: "/page" });
        return res.end();
      }
      if (req.url === "/image") {
        res.setHeader("content-type", "image/png");
        return res.end(Buffer.alloc(100));
      }
      res.statusCode = 404;
      res.end("not here");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const tool = (overrides: { maxBytes?: number; timeoutMs?: number } = {}) =>
    createHttpFetchTool({ allowedHosts: [`127.0.0.1:${port}`], maxBytes: overrides.maxBytes ?? 10_000, timeoutMs: overrides.timeoutMs ?? 2_000 });
  const url = (p: string) => `http://127.0.0.1:${port}${p}`;

  it("fetches from an allowed host with status, type and body", async () => {
    const out = await tool().execute({ url: url("/page") }, toolContext());
    expect(out).toContain("HTTP 200 OK");
    expect(out).toContain("<h1>Capacity 2027</h1>");
    expect(await tool().execute({ url: url("/json") }, toolContext())).toMatch(/content-type: application\/json\n\n\{"gwh":42\}$/);
    expect(await tool().execute({ url: url("/missing") }, toolContext())).toMatch(/^HTTP 404 Not Found[\s\S]*not here$/);
    expect(await tool().execute({ url: url("/redirect-in") }, toolContext())).toContain("Capacity 2027");
    expect(await tool().execute({ url: url("/image") }, toolContext())).toContain("[image/png content is not shown");
  });

  it("refuses other hosts, other ports, redirects leaving the allow-list and non-http URLs", async () => {
    await expect(tool().execute({ url: `http://localhost:${port}/page` }, toolContext())).rejects.toThrow(
      /localhost:\d+ is not on this server's fetch allow-list/,
    );
    await expect(tool().execute({ url: `http://127.0.0.1:${port + 1}/page` }, toolContext())).rejects.toThrow(ToolError);
    await expect(tool().execute({ url: url("/redirect-out") }, toolContext())).rejects.toThrow(/localhost:1 is not on this server's fetch allow-list/);
    await expect(tool().execute({ url: "file:///etc/passwd" }, toolContext())).rejects.toThrow(/http or https/);
    await expect(tool().execute({ url: "not a url" }, toolContext())).rejects.toThrow(/absolute/);
  });

  it("cuts a body over the size limit, says so, and stops downloading", async () => {
    bytesSent = 0;
    const out = await tool({ maxBytes: 2_000 }).execute({ url: url("/big") }, toolContext());
    const body = out.split("\n\n")[1]!.split("\n")[0]!;
    expect(body).toBe("a".repeat(2_000));
    expect(out).toContain("[truncated: the body is larger than 2000 bytes");
    await allowTimeFor("the download to go on (it must have stopped)", 200);
    expect(bytesSent).toBeLessThan(80 * 64 * 1024);
  });

  it("gives up after the time limit with a clear message", async () => {
    const started = Date.now();
    await expect(tool({ timeoutMs: 300 }).execute({ url: url("/slow") }, toolContext())).rejects.toThrow(/timed out after 300 ms/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("matches allow-list entries by host, port and subdomain wildcard", () => {
    expect(hostAllowed(new URL("https://example.com/x"), ["example.com"])).toBe(true);
    expect(hostAllowed(new URL("https://example.com:8443/x"), ["example.com"])).toBe(true);
    expect(hostAllowed(new URL("https://example.com/x"), ["example.com:8443"])).toBe(false);
    expect(hostAllowed(new URL("https://api.example.org/x"), ["*.example.org"])).toBe(true);
    expect(hostAllowed(new URL("https://example.org/x"), ["*.example.org"])).toBe(false);
    expect(hostAllowed(new URL("https://evilexample.org/x"), ["*.example.org"])).toBe(false);
    expect(hostAllowed(new URL("https://example.com.evil.net/x"), ["example.com"])).toBe(false);
  });

  it("tells internal addresses from public ones, IPv6 forms that carry an IPv4 address included", () => {
    const internal = [
      "127.0.0.1",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "100.100.100.200",
      "0.0.0.0",
      "255.255.255.255",
      "224.0.0.1",
      "::",
      "::1",
      "fd00::1",
      "fd00:ec2::254",
      "fe80::1",
      "fe80::1%eth0",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:a9fe:a9fe",
      "::127.0.0.1",
      "64:ff9b::a9fe:a9fe",
      "64:ff9b::7f00:1",
      "64:ff9b::127.0.0.1",
      "::ffff:0:127.0.0.1",
      "::ffff:0:7f00:1",
      "::ffff:0:a9fe:a9fe",
      "0:0:0:0:ffff:0:10.0.0.1",
      "64:ff9b:1::a00:1",
      "64:ff9b:1::10.0.0.1",
      "64:ff9b:1:ffff::808:808",
      "2002:7f00:1::",
      "not-an-address",
    ];
    expect(internal.filter((address) => !isInternalAddress(address))).toEqual([]);
    const external = [
      "93.184.215.14",
      "172.32.0.1",
      "1.1.1.1",
      "2606:4700::1111",
      "::ffff:8.8.8.8",
      "::ffff:0:8.8.8.8",
      "::ffff:0:808:808",
      "64:ff9b::808:808",
      "64:ff9b:2::808:808",
      "2002:808:808::",
    ];
    expect(external.filter(isInternalAddress)).toEqual([]);
  });

  it("refuses URLs written with an internal IPv4 address inside an IPv6 form, mixed notation included", () => {
    const hosts = ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::ffff:0:127.0.0.1]", "[64:ff9b::7f00:1]", "[64:ff9b:1::a00:1]", "[64:ff9b:1::10.0.0.1]"];
    const refused = hosts.filter((host) => literalAddressRefusal(new URL(`http://${host}/x`), [], "HTTP_FETCH_ALLOWED_HOSTS") !== null);
    expect(refused).toEqual(hosts);
  });
});
