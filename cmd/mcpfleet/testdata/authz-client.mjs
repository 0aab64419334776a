// The TypeScript SDK's client through a verifying gateway with
// authorization rules, as one caller (its bearer token given): it lists
// the tools and calls one, and prints one line of JSON: the tool names it
// saw, and the call's result or its error (the HTTP status and the
// WWW-Authenticate challenge the SDK reports, or the JSON-RPC error).
//
//   node authz-client.mjs http://GATEWAY/mcp TOKEN TOOL
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [server, token, tool] = process.argv.slice(2);
// The challenge of a 403, as the client's fetch saw it.
let challenge = "";
const transport = new StreamableHTTPClientTransport(new URL(server), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
  fetch: async (url, init) => {
    const res = await fetch(url, init);
    if (res.status === 403) challenge = res.headers.get("www-authenticate") ?? "";
    return res;
  },
});
const client = new Client({ name: "authz-client", version: "1" });
await client.connect(transport);
const { tools } = await client.listTools();
let call;
try {
  call = { result: await client.callTool({ name: tool, arguments: { key: "ts" } }) };
} catch (err) {
  call = { error: { code: err.code, message: err.message }, challenge };
}
process.stdout.write(JSON.stringify({ tools: tools.map((t) => t.name).sort(), call }) + "\n");
await client.close();
