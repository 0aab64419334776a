#!/usr/bin/env bash
# bench/statemem.sh: the gateway's memory per caller and per call record
# (docs/DEPLOY.md, "Sizing").
#
# A 2025-11-25 session costs the gateway nothing by itself: its ID is sealed
# and names its replica (docs/GATEWAY.md, "Sealed session IDs"). What a
# session's calls leave in a gateway is its caller's limit state (memory
# store) and an idempotency record per keyed call, kept idempotency_ttl.
# This starts three canned backends and one gateway with both in memory
# (limits.rate and concurrency, idempotency: memory), sends 2026-07-28
# tools/calls for DURATION, each from a new caller (a new bearer token) with a
# new Idempotency-Key, and reads the gateway's live heap
# (go_memstats_heap_alloc_bytes right after a collection, which
# /debug/pprof/heap?gc=1 runs) before and after: the growth over the calls
# is the bytes one caller and one record hold. Everything it starts is
# killed on exit.
#
# Env: DURATION (5s), CONNECTIONS (32).
set -euo pipefail

DUR=${DURATION:-5s}
CONNS=${CONNECTIONS:-32}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
own_scratch statemem

(cd "$ROOT" && go build -o "$WORK/canned" ./bench/canned && go build -o "$WORK/mcpfleet" ./cmd/mcpfleet)
B=()
for i in 1 2 3; do
	p=$(free_port)
	B+=("$p")
	"$WORK/canned" --listen "127.0.0.1:$p" >/dev/null 2>&1 &
	PIDS+=($!)
done
for p in "${B[@]}"; do wait_port "$p"; done
head -c 32 /dev/urandom | base64 >"$WORK/admin.token"
chmod 600 "$WORK/admin.token"
PORT=$(free_port)
ADMIN=$(free_port)
cat >"$WORK/gw.yaml" <<YAML
listen: 127.0.0.1:$PORT
admin: 127.0.0.1:$ADMIN
admin_token_file: $WORK/admin.token
admin_pprof: true
log_level: warn
health_check: {interval: 0s}
idempotency: memory
limits: {store: memory, rate: 1000000, concurrency: 100000}
upstreams:
$(for p in "${B[@]}"; do echo "  - url: http://127.0.0.1:$p/mcp"; done)
YAML
"$WORK/mcpfleet" serve --config "$WORK/gw.yaml" >"$WORK/gw.log" 2>&1 &
GW=$!
PIDS+=($!)
wait_port "$PORT"

# live_heap: the heap's live bytes right after a collection.
live_heap() {
	curl -s -o /dev/null -H "Authorization: Bearer $(cat "$WORK/admin.token")" "http://127.0.0.1:$ADMIN/debug/pprof/heap?gc=1"
	curl -s -H "Authorization: Bearer $(cat "$WORK/admin.token")" "http://127.0.0.1:$ADMIN/metrics" |
		awk '$1 == "go_memstats_heap_alloc_bytes" {printf "%.0f", $2}'
}
cat >"$WORK/calls.lua" <<LUA
local n = 0
local t = string.sub(tostring({}), 8)
request = function()
  n = n + 1
  local h = { ["Content-Type"] = "application/json", ["Accept"] = "application/json, text/event-stream",
    ["Mcp-Protocol-Version"] = "2026-07-28", ["Mcp-Method"] = "tools/call", ["Mcp-Name"] = "echo",
    ["Authorization"] = "Bearer " .. t .. "-caller-" .. n, ["Idempotency-Key"] = t .. "-" .. n }
  return wrk.format("POST", "/mcp", h, '{"jsonrpc":"2.0","id":' .. n ..
    ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}')
end
LUA
# One call first: what the first request allocates for good (pools,
# buffers) is not a caller's.
curl -s -o /dev/null "http://127.0.0.1:$PORT/mcp" -H 'Content-Type: application/json' -H 'Accept: application/json' \
	-H 'Mcp-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' -H 'Authorization: Bearer warm' \
	--data '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
h0=$(live_heap)
r0=$(awk '{print $24 * 4096}' "/proc/$GW/stat")
wrk -t1 -c"$CONNS" -d"$DUR" -s "$WORK/calls.lua" "http://127.0.0.1:$PORT/mcp" >"$WORK/wrk.txt" 2>&1 || true
h1=$(live_heap)
r1=$(awk '{print $24 * 4096}' "/proc/$GW/stat")
reqs=$(awk '/requests in/ {print $1}' "$WORK/wrk.txt")
awk -v h0="$h0" -v h1="$h1" -v r0="$r0" -v r1="$r1" -v n="$reqs" 'BEGIN {
	printf "calls (each a new caller and a new idempotency record): %d\n", n
	printf "live heap: %.1f MiB -> %.1f MiB, %.0f bytes per caller and record\n", h0 / 1048576, h1 / 1048576, (h1 - h0) / n
	printf "RSS: %.1f MiB -> %.1f MiB, %.0f bytes per caller and record\n", r0 / 1048576, r1 / 1048576, (r1 - r0) / n}'
