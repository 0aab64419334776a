// The TypeScript SDK's 2024-11-05 SSE client through two gateways: it
// opens its stream through gateway A, and every POST goes to A and B by
// turns (a fetch that rewrites the host, as an L4 balancer would spread
// them). It calls echo CALLS times on the one session and prints a JSON
// summary.
//
//   node sse2024-client.mjs http://GATEWAY_A http://GATEWAY_B CALLS
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";

const [a, b, calls] = process.argv.slice(2);
const hosts = [new URL(a).host, new URL(b).host];
const posts = {};
let turn = 0;
let endpoint = "";

async function alternating(url, init) {
  if (init?.method === "POST") {
    const u = new URL(url);
    endpoint = u.pathname + u.search;
    u.host = hosts[turn++ % hosts.length];
    posts[u.host] = (posts[u.host] ?? 0) + 1;
    url = u;
  }
  return fetch(url, init);
}

const transport = new SSEClientTransport(new URL("/sse", a), { fetch: alternating });
const client = new Client({ name: "sse2024-client", version: "1" });
await client.connect(transport);
let ok = 0;
const failures = [];
for (let i = 1; i <= Number(calls); i++) {
  try {
    const res = await client.callTool({ name: "echo", arguments: { message: `call ${i}` } });
    if (!res.isError && res.content?.[0]?.text === `Echo: call ${i}`) {
      ok++;
    } else {
      failures.push(`call ${i}: ${JSON.stringify(res)}`);
    }
  } catch (err) {
    failures.push(`call ${i}: ${err}`);
  }
}
await client.close();
console.log(JSON.stringify({ ok, failures, posts: hosts.map((h) => posts[h] ?? 0), endpoint }));
