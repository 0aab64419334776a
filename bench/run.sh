#!/usr/bin/env bash
# bench/run.sh: mcpfleet against nginx and HAProxy on loopback (docs/BENCHMARKS.md).
#
# Builds mcpfleet and the canned backend, starts three canned backends and three
# testservers, and runs wrk against each target in turn (direct, mcpfleet,
# mcpfleet with GOMAXPROCS=1, nginx with 1 worker, HAProxy with nbthread 1 in
# the configuration of the GitLab MCP server's load-balancing guide, and the same HAProxy with server keep-alive) for:
#   a) 2026-07-28 tools/call to canned backends
#   b) legacy session POSTs to canned backends
#   c) 2026-07-28 tools/call echo to testservers
# then the idle SSE streams the gateway holds (RSS per stream) and the time to
# relay a burst of progress notifications. Everything it starts is killed on exit.
#
# Each scenario runs BENCH_ROUNDS rounds, every round visiting each target in
# turn, so that a slow moment of the machine falls on all of them alike; the
# summary gives each target's median over the rounds, and the ratios of
# medians.
#
# Env: BENCH_DURATION (10s), BENCH_CONNECTIONS (32), BENCH_THREADS (2),
# BENCH_ROUNDS (3), BENCH_TARGETS, BENCH_STREAMS ("2000 9000"),
# BENCH_OUT (results dir, kept).
set -euo pipefail

DUR=${BENCH_DURATION:-10s}
CONNS=${BENCH_CONNECTIONS:-32}
THREADS=${BENCH_THREADS:-2}
ROUNDS=${BENCH_ROUNDS:-3}
TARGETS=${BENCH_TARGETS:-"direct mcpfleet mcpfleet-p1 nginx haproxy haproxy-ka"}
STREAMS=${BENCH_STREAMS:-"2000 9000"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/mcpfleet-bench.XXXXXX)
OUT=${BENCH_OUT:-$WORK/results}
mkdir -p "$OUT"
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ $OUT == "$WORK"/* ]]; then
		rm -rf "$WORK/bin" "$WORK/nginx" "$WORK"/*.lua # keep the logs beside the results
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

start() { # start NAME CMD...: background, logs in $WORK/NAME.log
	local name=$1
	shift
	"$@" >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	eval "PID_${name//-/_}=$!"
}

stop() { # stop NAME...
	local n v
	for n in "$@"; do
		v="PID_${n//-/_}"
		kill "${!v}" 2>/dev/null || true
		wait "${!v}" 2>/dev/null || true
	done
}

log "building into $WORK/bin"
mkdir -p "$WORK/bin"
(cd "$ROOT" && go build -o "$WORK/bin/mcpfleet" ./cmd/mcpfleet &&
	go build -o "$WORK/bin/canned" ./bench/canned &&
	go build -o "$WORK/bin/streams" ./bench/streams)
BIN=$WORK/bin

# ---- proxies -------------------------------------------------------------

haproxy_conf() { # haproxy_conf KEEPALIVE(0|1) PORT BACKEND_PORT...
	local ka=$1 port=$2 b i=0
	shift 2
	{
		cat <<HAP
global
  nbthread 1
  maxconn 9000
defaults
  mode http
  timeout connect 2s
  timeout client 1h
  timeout server 1h
  retries 1
HAP
		# That guide says http-server-close: a new backend connection per request.
		# The -ka variant keeps HAProxy's default (keep-alive, reused server side).
		[[ $ka == 0 ]] && echo "  option http-server-close"
		cat <<HAP
frontend mcp
  bind 127.0.0.1:$port
  http-request set-var(txn.cred) req.hdr(PRIVATE-TOKEN)
  http-request set-var(txn.cred) req.hdr(Authorization),regsub(^[Bb]earer\ +,) if !{ req.hdr(PRIVATE-TOKEN) -m found }
  http-request set-var(txn.cred) src,ipmask(32,128) if !{ var(txn.cred) -m found }
  default_backend mcp_servers
backend mcp_servers
  balance hash var(txn.cred),concat($SALT),sha1,hex
  hash-type consistent
  option httpchk
  http-check send meth GET uri /health hdr Host 127.0.0.1
  http-check expect status 200
HAP
		for b in "$@"; do
			i=$((i + 1))
			echo "  server r$i 127.0.0.1:$b check inter 2s fall 2 rise 2"
		done
	} >"$WORK/haproxy-$port.cfg"
	echo "$WORK/haproxy-$port.cfg"
}

declare -A PORT
# start_targets SUFFIX BACKEND_PORT...: one of each proxy in front of the backends.
start_targets() {
	local sfx=$1 t ups=() b
	shift
	for b in "$@"; do ups+=(--upstream "http://127.0.0.1:$b/mcp"); done
	for t in mcpfleet mcpfleet-p1 nginx haproxy haproxy-ka; do PORT[$t]=$(free_port); done
	PORT[direct]=$1
	start "mcpfleet-$sfx" "$BIN/mcpfleet" serve --listen "127.0.0.1:${PORT[mcpfleet]}" \
		--health-check-interval 0 --log-level warn "${ups[@]}"
	start "mcpfleet-p1-$sfx" env GOMAXPROCS=1 "$BIN/mcpfleet" serve --listen "127.0.0.1:${PORT[mcpfleet-p1]}" \
		--health-check-interval 0 --log-level warn "${ups[@]}"
	start "nginx-$sfx" nginx -c "$(nginx_conf "${PORT[nginx]}" "$@")"
	start "haproxy-$sfx" haproxy -db -f "$(haproxy_conf 0 "${PORT[haproxy]}" "$@")"
	start "haproxy-ka-$sfx" haproxy -db -f "$(haproxy_conf 1 "${PORT[haproxy-ka]}" "$@")"
	for t in mcpfleet mcpfleet-p1 nginx haproxy haproxy-ka; do wait_port "${PORT[$t]}"; done
	sleep 0.5 # HAProxy's first health checks
}

# ---- wrk -----------------------------------------------------------------

# lua_script FILE KIND PORT [SESSION_ID...]: KIND 2026 (tools/call NAME=echo) or legacy.
lua_script() {
	local file=$1 kind=$2 port=$3 ids="" id
	shift 3
	for id in "$@"; do ids+="\"$id\","; done
	cat >"$file" <<LUA
-- Varies Authorization per request, so that hashing spreads the load.
local ids = {$ids}
local kind = "$kind"
local host = "127.0.0.1:$port"
-- Every request has its own JSON-RPC id: within a session a client must not
-- reuse one, and mcpfleet answers a re-sent id from its record.
local b2026 = '","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
local blegacy = '","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}'
local n = 0
local t = string.sub(tostring({}), 8) -- differs per wrk thread (its own Lua state)
request = function()
  n = n + 1
  local h = {
    ["Host"] = host,
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
  }
  if kind == "2026" then
    h["Mcp-Protocol-Version"] = "2026-07-28"
    h["Mcp-Method"] = "tools/call"
    h["Mcp-Name"] = "echo"
    h["Authorization"] = "Bearer tok-" .. (n % 1024)
    return wrk.format("POST", "/mcp", h, '{"jsonrpc":"2.0","id":"' .. t .. '-' .. n .. b2026)
  end
  local i = (n % #ids) + 1
  h["Mcp-Protocol-Version"] = "2025-11-25"
  h["Mcp-Session-Id"] = ids[i]
  h["Authorization"] = "Bearer sess-" .. i
  return wrk.format("POST", "/mcp", h, '{"jsonrpc":"2.0","id":"' .. t .. '-' .. n .. blegacy)
end
LUA
}

SESSIONS=30
# sealed_ids PORT: initializes SESSIONS sessions through a gateway, prints the sealed IDs.
sealed_ids() {
	local i sid
	for i in $(seq "$SESSIONS"); do
		sid=$(curl -sS -m 5 -o /dev/null -D - "http://127.0.0.1:$1/mcp" \
			-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
			-H "Authorization: Bearer sess-$i" -H 'Mcp-Protocol-Version: 2025-11-25' \
			--data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}' |
			tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
		[[ -n $sid ]] || { log "no session ID from port $1"; return 1; }
		echo "$sid"
	done
}

# run_wrk SCENARIO TARGET SCRIPT ROUND: one wrk run, one results line.
RESULTS=$OUT/results.tsv
printf 'scenario\ttarget\tround\treq_per_s\tp50_ms\tp99_ms\tnon2xx\tsocket_errors\n' >"$RESULTS"
run_wrk() {
	local sc=$1 t=$2 lua=$3 round=$4 f="$OUT/wrk-$1-$2-$4.txt"
	log "wrk $sc $t round $round ($DUR)"
	timeout 120 wrk -t"$THREADS" -c"$CONNS" -d"$DUR" --latency -s "$lua" "http://127.0.0.1:${PORT[$t]}/mcp" >"$f" 2>&1 || true
	awk -v sc="$sc" -v t="$t" -v round="$round" '
		function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
		/Requests\/sec/ {rps=$2}
		/^ +50%/ {p50=ms($2)}
		/^ +99%/ {p99=ms($2)}
		/Non-2xx/ {non=$NF}
		/Socket errors/ {se=$0; sub(/.*errors: /, "", se)}
		END {printf "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%s\t%s\n", sc, t, round, rps, p50, p99, (non==""?0:non), (se==""?"-":se)}' "$f" >>"$RESULTS"
	tail -1 "$RESULTS" >&2
}

# check TARGET SCRIPT_KIND: one request, must be 200 with a result.
check() {
	local code
	code=$(curl -sS -m 5 -o "$WORK/check.out" -w '%{http_code}' "http://127.0.0.1:${PORT[$1]}/mcp" "${@:2}" || true)
	if [[ $code != 200 ]] || ! grep -q '"result"' "$WORK/check.out"; then
		log "check $1 failed: $code $(head -c 300 "$WORK/check.out")"
		return 1
	fi
}
H2026=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
	-H 'Mcp-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' -H 'Authorization: Bearer tok-1'
	--data '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}')

# scenario NAME KIND: check each target, then ROUNDS rounds of wrk against
# each target in turn.
scenario() {
	local sc=$1 kind=$2 t round
	for t in $TARGETS; do
		local ids=()
		if [[ $kind == legacy ]]; then
			case $t in
			mcpfleet | mcpfleet-p1) mapfile -t ids < <(sealed_ids "${PORT[$t]}") ;;
			*) for i in $(seq "$SESSIONS"); do ids+=("canned-$i"); done ;;
			esac
			check "$t" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
				-H "Mcp-Session-Id: ${ids[0]}" -H 'Mcp-Protocol-Version: 2025-11-25' \
				--data '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}'
		else
			check "$t" "${H2026[@]}"
		fi
		lua_script "$WORK/$sc-$t.lua" "$kind" "${PORT[$t]}" "${ids[@]}"
	done
	for round in $(seq "$ROUNDS"); do
		for t in $TARGETS; do
			run_wrk "$sc" "$t" "$WORK/$sc-$t.lua" "$round"
		done
	done
}

# ---- (a), (b): canned backends -----------------------------------------------
C=()
for i in 1 2 3; do
	p=$(free_port)
	C+=("$p")
	start "canned$i" "$BIN/canned" --listen "127.0.0.1:$p"
done
for p in "${C[@]}"; do wait_port "$p"; done
start_targets canned "${C[@]}"
scenario a-2026-canned 2026
scenario b-legacy-canned legacy
stop mcpfleet-canned mcpfleet-p1-canned nginx-canned haproxy-canned haproxy-ka-canned canned1 canned2 canned3

# ---- (c): testservers ----------------------------------------------------------
T=()
for i in 1 2 3; do
	p=$(free_port)
	T+=("$p")
	start "ts$i" "$BIN/mcpfleet" testserver --listen "127.0.0.1:$p" --name "ts$i"
done
for p in "${T[@]}"; do wait_port "$p"; done
start_targets ts "${T[@]}"
scenario c-2026-testserver 2026

# ---- progress burst: one sleep call, 1 s, a progress event every ms ------------
printf 'target\tevents\tfirst_ms\tlast_ms\tresult_ms\n' >"$OUT/progress.tsv"
for t in $TARGETS; do
	for rep in 1 2 3; do
		line=$(timeout 30 "$BIN/streams" -mode progress -url "http://127.0.0.1:${PORT[$t]}/mcp" -seconds 1 -every 0.001 || echo "failed")
		printf '%s\t%s\n' "$t" "$(echo "$line" | awk '{print $2"\t"$4"\t"$6"\t"$8}')" >>"$OUT/progress.tsv"
	done
done
log "progress burst:"
column -t "$OUT/progress.tsv" >&2
stop mcpfleet-ts mcpfleet-p1-ts nginx-ts haproxy-ts haproxy-ka-ts

# ---- idle SSE streams held by a fresh gateway --------------------------------
rss_kib() { awk '/VmRSS/{print $2}' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
printf 'streams_asked\tstreams_held\tfailed\topen_s\trss_before_kib\trss_after_kib\tkib_per_stream\tgateway_fds\n' >"$OUT/streams.tsv"
for n in $STREAMS; do
	gp=$(free_port)
	start "gw-streams-$n" "$BIN/mcpfleet" serve --listen "127.0.0.1:$gp" --health-check-interval 0 --log-level warn \
		--keepalive 0 --upstream "http://127.0.0.1:${T[0]}/mcp" --upstream "http://127.0.0.1:${T[1]}/mcp" --upstream "http://127.0.0.1:${T[2]}/mcp"
	wait_port "$gp"
	v="PID_gw_streams_$n"
	gpid=${!v}
	sleep 0.5
	before=$(rss_kib "$gpid")
	start "streams-$n" "$BIN/streams" -mode hold -url "http://127.0.0.1:$gp/mcp" -n "$n" -workers 64 -budget 60s -hold 120s
	v="PID_streams_$n"
	for i in $(seq 700); do grep -q '^held' "$WORK/streams-$n.log" && break; sleep 0.1; done
	sleep 2
	after=$(rss_kib "$gpid")
	held=$(awk '/^held/{print $2}' "$WORK/streams-$n.log")
	failed=$(awk '/^held/{print $4}' "$WORK/streams-$n.log")
	opens=$(awk '/^held/{print $6}' "$WORK/streams-$n.log")
	per=$(awk -v a="$after" -v b="$before" -v h="${held:-0}" 'BEGIN{ if (h>0) printf "%.1f", (a-b)/h; else print "-" }')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "${held:-0}" "${failed:-?}" "${opens:-?}" "$before" "$after" "$per" "$(fds "$gpid")" >>"$OUT/streams.tsv"
	tail -1 "$OUT/streams.tsv" >&2
	grep -m3 -i 'fail\|error' "$WORK/streams-$n.log" >&2 || true
	stop "streams-$n" "gw-streams-$n"
done
stop ts1 ts2 ts3

echo
echo "== wrk: $THREADS threads, $CONNS connections, $DUR each, $ROUNDS rounds; medians over the rounds =="
# median of a column for each (scenario, target), in the order they ran
MEDIANS=$OUT/medians.tsv
awk -F'\t' 'NR>1 {k=$1"\t"$2; if (!(k in n)) order[++m]=k; n[k]++; rps[k,n[k]]=$4; p50[k,n[k]]=$5; p99[k,n[k]]=$6; non[k]+=$7}
	function med(a, k, c,   i, j, t, v) { for (i=1;i<=c;i++) v[i]=a[k,i]+0
		for (i=1;i<=c;i++) for (j=i+1;j<=c;j++) if (v[j]<v[i]) {t=v[i]; v[i]=v[j]; v[j]=t}
		return (c%2) ? v[(c+1)/2] : (v[c/2]+v[c/2+1])/2 }
	END {printf "scenario\ttarget\treq_per_s\tp50_ms\tp99_ms\tnon2xx\n"
		for (i=1;i<=m;i++) {k=order[i]; printf "%s\t%.0f\t%.2f\t%.2f\t%d\n", k, med(rps,k,n[k]), med(p50,k,n[k]), med(p99,k,n[k]), non[k]}}' "$RESULTS" >"$MEDIANS"
column -t -s $'\t' "$MEDIANS"
echo
echo "== ratios of medians (mcpfleet / other): requests/s, p99 =="
awk -F'\t' 'NR>1 {r[$1" "$2]=$3; p[$1" "$2]=$5; if (!($1 in sc)) so[++ns]=$1; sc[$1]=1}
	END {n=split("mcpfleet mcpfleet-p1", G, " "); m=split("nginx haproxy haproxy-ka", P, " ");
		printf "scenario\tpair\treq_per_s\tp99\n"
		for (s=1;s<=ns;s++) for (i=1;i<=n;i++) for (j=1;j<=m;j++) {a=so[s]" "G[i]; b=so[s]" "P[j]
			if (r[a] > 0 && r[b] > 0) printf "%s\t%s/%s\t%.2f\t%.2f\n", so[s], G[i], P[j], r[a]/r[b], (p[b] > 0 ? p[a]/p[b] : 0)}}' "$MEDIANS" | column -t -s $'\t'
echo
echo "== progress burst (1 s sleep, progress every 1 ms; 3 calls each) =="
column -t -s $'\t' "$OUT/progress.tsv"
echo
echo "== idle SSE streams (legacy GET) held by one gateway =="
column -t -s $'\t' "$OUT/streams.tsv"
echo
echo "raw results: $OUT"
