// The TypeScript SDK's client through a gateway, calling a tool with
// progress while the test kills the replica: after the first progress it
// prints "progress", then the call's outcome as one line of JSON (its
// result, or its error's code, message and data).
//
//   node lost-client.mjs streamable|sse http://GATEWAY TOOL ARGUMENTS_JSON
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, gateway, tool, args] = process.argv.slice(2);
const transport =
  mode === "sse"
    ? new SSEClientTransport(new URL("/sse", gateway))
    : new StreamableHTTPClientTransport(new URL("/mcp", gateway));
const client = new Client({ name: "lost-client", version: "1" });
await client.connect(transport);
let told = false;
let out;
try {
  const result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, undefined, {
    timeout: 60000,
    onprogress: () => {
      if (!told) {
        told = true;
        process.stdout.write("progress\n");
      }
    },
  });
  out = { result };
} catch (err) {
  out = { error: { code: err.code, message: err.message, data: err.data } };
}
process.stdout.write(JSON.stringify(out) + "\n");
// The session's replica is gone: closing it would only wait.
process.exit(0);
