// The TypeScript SDK's OAuth discovery against a verifying gateway: it
// posts to the MCP endpoint without a token, reads the 401's challenge
// (extractWWWAuthenticateParams), fetches the protected resource metadata
// as a client does (discoverOAuthProtectedResourceMetadata: the
// path-inserted URL first), and checks its resource against the server's
// URL (selectResourceURL). It prints a JSON summary.
//
//   node prm-client.mjs http://GATEWAY/mcp
import {
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
  selectResourceURL,
} from "@modelcontextprotocol/sdk/client/auth.js";

const [server] = process.argv.slice(2);
const res = await fetch(server, {
  method: "POST",
  headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
});
await res.body?.cancel();
const challenge = extractWWWAuthenticateParams(res);
const metadata = await discoverOAuthProtectedResourceMetadata(server, {
  resourceMetadataUrl: challenge.resourceMetadataUrl,
});
const resource = await selectResourceURL(server, {}, metadata);
console.log(JSON.stringify({
  status: res.status,
  resourceMetadataUrl: challenge.resourceMetadataUrl?.href ?? "",
  scope: challenge.scope ?? "",
  metadata,
  resource: resource?.href ?? "",
}));
