// The official TypeScript SDK's client through a gateway, in one protocol
// era: it lists the tools, calls echo, then calls a long-running tool with
// progress, and prints what it saw as one line of JSON.
//
//   node stdio-client.mjs v1|v2 legacy|modern http://GATEWAY/mcp
//
// v1 is @modelcontextprotocol/sdk (the 2025 release line, legacy era only);
// v2 is @modelcontextprotocol/client, pinned to 2026-07-28 for modern.
const [line, era, url] = process.argv.slice(2);
const sdk =
  line === "v1"
    ? {
        ...(await import("@modelcontextprotocol/sdk/client/index.js")),
        ...(await import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
      }
    : await import("@modelcontextprotocol/client");
const options = era === "modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {};
const client = new sdk.Client({ name: "stdio-interop-client", version: "1" }, options);
await client.connect(new sdk.StreamableHTTPClientTransport(new URL(url)));
const out = { version: client.getNegotiatedProtocolVersion?.() ?? null };
out.tools = (await client.listTools()).tools.map((t) => t.name);
const echo = await client.callTool({ name: "echo", arguments: { message: `hi ${line} ${era}` } });
out.echo = echo.content[0].text;
let progress = 0;
const call = { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 4 } };
const opts = { timeout: 30000, onprogress: () => progress++ };
// v1's callTool takes a result schema before the options; v2's does not.
const long = await (line === "v1" ? client.callTool(call, undefined, opts) : client.callTool(call, opts));
out.long = long.content[0].text;
out.progress = progress;
process.stdout.write(JSON.stringify(out) + "\n");
await client.close();
