#!/usr/bin/env bash
# bench/features.sh: what each feature costs a tools/call, measured through
# one gateway on loopback (docs/BENCHMARKS.md, "What each feature costs").
#
#   bench/features.sh [FEATURE ...]        # default: every feature below
#
# Starts three canned backends (--tools: echo is declared read-only), a
# redis-server, a discarding OTLP receiver (canned --otlp-sink), and one
# gateway per feature: the feature alone, from a configuration where
# everything optional is off (idempotency off, session_binding none, no
# limits, cache, auth or tracing, log_level warn; the stdio feature's
# upstreams are the same canned backend as three stdio children, canned
# --stdio). Then ROUNDS rounds, each
# visiting the replica directly and every gateway in turn, with one wrk
# thread (HTTP/1.1, the gateway's h1 server, plaintext) and then h2load
# (HTTP/2 over TLS, server std), CONNECTIONS connections, DURATION each.
# Every run records: the gateway's CPU per call (user+system time from
# /proc over the run, over its calls), the calls' p50 and p99, the Go
# allocations per call (go_memstats_mallocs_total on its admin listener),
# the Redis commands per call (INFO commandstats, summed, INFO itself left
# out), the round trips per call the gateway's client counted
# (mcpfleet_redis_round_trips_total), redis-server's CPU per call, answers
# that were not 2xx, and the load generator's own CPU (cores busy). The
# medians over the rounds are printed as the doc's two tables, with CPU as a
# ratio to "none" of the same run and latency added to the direct run's.
# Everything it starts is killed on exit.
#
# Env: ROUNDS (3), DURATION (4s), CONNECTIONS (32), PROTOCOLS ("h1 h2"),
#      OUT (a directory to keep runs.tsv and the tables in; default: none).
set -euo pipefail

# The features, in the tables' order. Each has a case in feature_yaml (its
# configuration) and a load in load_of. A feature still being built stays
# in NOT_YET_BUILT: it is skipped, and the tables keep a row saying so. To
# add it: give it a case in feature_yaml, take it out of NOT_YET_BUILT, run
# this script and put its rows in the doc (a test checks that every feature
# here has a row with numbers there). H1_ONLY are the features whose load
# must change from call to call (new arguments, a new Idempotency-Key):
# h2load sends one request over and over, so over HTTP/2 they are not run.
FEATURES=(none access-log limits-memory limits-redis toolcap-redis cache-hit-local cache-miss-local
	cache-hit-redis cache-miss-redis idem-memory idem-redis trace-1 trace-0.01 jwt jwt-uncached session session-binding
	authz stdio all)
NOT_YET_BUILT=()
H1_ONLY=(cache-miss-local cache-miss-redis idem-memory idem-redis)

ROUNDS=${ROUNDS:-3}
DUR=${DURATION:-4s}
CONNS=${CONNECTIONS:-32}
PROTOCOLS=${PROTOCOLS:-"h1 h2"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
own_scratch features

# port_of VAR: sets VAR to a free loopback port.
port_of() {
	printf -v "$1" '%s' "$(free_port)"
}

in_list() {
	local x=$1 y
	shift
	for y in "$@"; do [[ $x == "$y" ]] && return 0; done
	return 1
}

# load_of NAME: fixed (one request, the same every call), varied (new
# arguments and Idempotency-Key every call) or legacy (a 2025-11-25
# session's call).
load_of() {
	case $1 in
	cache-miss-* | idem-*) echo varied ;;
	session | session-binding) echo legacy ;;
	all) [[ $2 == h1 ]] && echo varied || echo fixed ;;
	*) echo fixed ;;
	esac
}

# feature_yaml NAME: the configuration keys that turn the feature on.
feature_yaml() {
	local limits='limits: {store: redis, rate: 1000000, concurrency: 100000}'
	local auth="auth: {jwks_file: $WORK/jwks.json, issuers: [https://idp.bench], audiences: [https://gw.bench/mcp]}"
	local tel="telemetry: {otlp_endpoint: http://127.0.0.1:$SINK_PORT"
	case $1 in
	none | session | stdio) ;;
	access-log) echo 'log_level: info' ;;
	limits-memory) echo "${limits/redis/memory}" ;;
	limits-redis) echo "$limits" ;;
	toolcap-redis) echo 'limits: {store: redis, tools: {echo: 100000}}' ;;
	cache-*-local) echo 'cache: {mode: local, tools: [echo]}' ;;
	cache-*-redis) echo 'cache: {mode: shared, tools: [echo]}' ;;
	idem-memory) echo 'idempotency: memory' ;;
	idem-redis) echo 'idempotency: redis' ;;
	trace-1) echo "$tel, sample_ratio: 1}" ;;
	trace-0.01) echo "$tel, sample_ratio: 0.01}" ;;
	jwt) echo "$auth" ;;
	jwt-uncached) echo "${auth%\}}, token_cache_size: 0}" ;;
	session-binding) echo 'session_binding: identity' ;;
	authz)
		# docs/GATEWAY.md's rules: echo matches none of them, so every
		# call is put to all three before the default allows it.
		cat <<'YAML'
authz:
  rules:
    - name: mutate-needs-write
      match: 'mcp.tool == "mutate" && !("mcp:write" in caller.scopes)'
      effect: deny
      scopes: [mcp:write]
    - name: restart-oncall
      match: 'mcp.tool.startsWith("restart_") && "oncall" in caller.scopes'
      effect: allow
    - name: restart-others
      match: 'mcp.tool.startsWith("restart_")'
      effect: deny
YAML
		;;
	all)
		printf '%s\n' 'log_level: info' "${limits%\}}, tools: {echo: 100000}}" 'cache: {mode: shared, tools: [echo]}' \
			'idempotency: redis' "$tel, sample_ratio: 0.01}" "$auth" 'session_binding: identity'
		;;
	*) log "no configuration for feature $1"; return 1 ;;
	esac
}

# write_config NAME PROTO PORT ADMIN: the gateway's configuration file.
write_config() {
	local f="$WORK/$1-$2.yaml" frag
	frag=$(feature_yaml "$1")
	{
		[[ -n $frag ]] && echo "$frag"
		for kv in 'log_level: warn' 'idempotency: "off"' 'session_binding: none'; do
			grep -q "^${kv%%:*}:" <<<"$frag" || echo "$kv"
		done
		echo "listen: 127.0.0.1:$3"
		echo "admin: 127.0.0.1:$4"
		echo "health_check: {interval: 0s}"
		echo "secret_file: $WORK/secret.yaml"
		echo "redis_url: redis://127.0.0.1:$REDIS_PORT/0"
		[[ $2 == h2 ]] && echo "tls: {cert_file: $WORK/cert.pem, key_file: $WORK/key.pem}"
		echo "upstreams:"
		if [[ $1 == stdio ]]; then
			# The same canned backend, three of it, as stdio children.
			echo "  - {name: canned, stdio: {command: [$WORK/canned, --stdio], processes: 3}}"
		else
			for p in "${B[@]}"; do echo "  - url: http://127.0.0.1:$p/mcp"; done
		fi
	} >"$f"
	echo "$f"
}

want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=("${FEATURES[@]}")
RUN=()
for f in "${want[@]}"; do
	in_list "$f" "${FEATURES[@]}" || { echo "unknown feature $f (known: ${FEATURES[*]})" >&2; exit 2; }
	if in_list "$f" "${NOT_YET_BUILT[@]}"; then
		log "$f: not yet built, skipped"
		continue
	fi
	RUN+=("$f")
done

log "building into $WORK"
(cd "$ROOT" && go build -o "$WORK/canned" ./bench/canned && go build -o "$WORK/mcpfleet" ./cmd/mcpfleet &&
	go build -o "$WORK/mintjwt" ./bench/mintjwt)
(umask 077 && "$WORK/mcpfleet" secret >"$WORK/secret.yaml")
TOKEN_JWT=$("$WORK/mintjwt" --jwks "$WORK/jwks.json" --iss https://idp.bench --aud https://gw.bench/mcp)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
	-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null

B=()
for i in 1 2 3; do
	port_of p
	B+=("$p")
	"$WORK/canned" --tools --listen "127.0.0.1:$p" >/dev/null 2>&1 &
	PIDS+=($!)
done
port_of SINK_PORT
"$WORK/canned" --otlp-sink --listen "127.0.0.1:$SINK_PORT" >/dev/null 2>&1 &
PIDS+=($!)
port_of REDIS_PORT
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
PIDS+=($!)
for p in "${B[@]}" "$SINK_PORT" "$REDIS_PORT"; do wait_port "$p"; done

CALL='"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
LEGACY='{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}'
# headers KIND TOKEN [SESSION]: HDR, a call's headers for curl and h2load.
headers() {
	HDR=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H "Authorization: Bearer $2")
	if [[ $1 == legacy ]]; then
		HDR+=(-H 'Mcp-Protocol-Version: 2025-11-25' -H "Mcp-Session-Id: $3")
	else
		HDR+=(-H 'Mcp-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo')
	fi
}

# lua NAME KIND TOKEN [SESSION]: wrk's script for a load. fixed and legacy
# set one request (wrk builds it once); varied builds each call.
lua() {
	local f="$WORK/$1.lua"
	case $2 in
	fixed)
		cat >"$f" <<LUA
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,$CALL'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Mcp-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "echo"
wrk.headers["Authorization"] = "Bearer $3"
LUA
		;;
	legacy)
		cat >"$f" <<LUA
wrk.method = "POST"
wrk.body = '$LEGACY'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Mcp-Protocol-Version"] = "2025-11-25"
wrk.headers["Mcp-Session-Id"] = "$4"
wrk.headers["Authorization"] = "Bearer $3"
LUA
		;;
	varied)
		cat >"$f" <<LUA
local n = 0
local t = string.sub(tostring({}), 8)
local h = { ["Content-Type"] = "application/json", ["Accept"] = "application/json, text/event-stream",
  ["Mcp-Protocol-Version"] = "2026-07-28", ["Mcp-Method"] = "tools/call", ["Mcp-Name"] = "echo",
  ["Authorization"] = "Bearer $3" }
request = function()
  n = n + 1
  h["Idempotency-Key"] = t .. "-" .. n
  return wrk.format("POST", "/mcp", h, '{"jsonrpc":"2.0","id":' .. n ..
    ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"' .. t .. '-' .. n ..
    '"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}')
end
LUA
		;;
	esac
	echo "$f"
}

# initialize URL TOKEN: a 2025-11-25 session's (sealed) ID, opened through URL.
initialize() {
	curl -sSk -m 5 -D - -o /dev/null "$1" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		-H "Authorization: Bearer $2" --data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}' |
		awk 'tolower($1) == "mcp-session-id:" {sub(/\r$/, "", $2); print $2}'
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {printf "%.0f", $2}'; }
# redis_calls: "command calls" per line, INFO's own calls left out.
redis_calls() {
	redis-cli -p "$REDIS_PORT" info commandstats | tr -d '\r' |
		awk -F'[:=,]' '/^cmdstat_/ && $1 != "cmdstat_info" {sub(/^cmdstat_/, "", $1); print $1, $3}'
}

declare -A PORT ADMIN PID LUA SID TOK
printf 'proto\tround\tfeature\treqs\tcpu_us\tp50_ms\tp99_ms\tallocs\tredis_cmds\tround_trips\tredis_us\tnon2xx\tgen_cores\tcommands\n' >"$WORK/runs.tsv"

# measure PROTO ROUND NAME URL: one run against URL, a line of runs.tsv.
measure() {
	local proto=$1 round=$2 n=$3 url=$4 c0 c1 m0=0 m1=0 t0=0 t1=0 r0 r1 rc0 rc1 d=${DUR%s}
	local pid=${PID[$n]:-} adm=${ADMIN[$n]:-}
	[[ -n $pid ]] && c0=$(cpu_ticks "$pid")
	[[ -n $adm ]] && m0=$(metric "$adm" go_memstats_mallocs_total) && t0=$(metric "$adm" mcpfleet_redis_round_trips_total)
	r0=$(redis_calls)
	rc0=$(cpu_ticks "$REDIS_PID")
	if [[ $proto == h1 ]]; then
		/usr/bin/time -f '%U %S' -o "$WORK/time.txt" timeout 120 wrk -t1 -c"$CONNS" -d"$DUR" --latency -s "${LUA[$n]}" "$url" >"$WORK/out.txt" 2>&1 || true
	else
		local h1=()
		rm -f "$WORK/h2.log" # h2load appends to its log
		[[ $n == direct ]] && h1=(--h1)
		/usr/bin/time -f '%U %S' -o "$WORK/time.txt" timeout 120 h2load "${h1[@]}" -D "$d" -c "$CONNS" -m 1 -d "$WORK/$n.body" \
			"${HDR[@]}" --log-file "$WORK/h2.log" "$url" >"$WORK/out.txt" 2>&1 || true
	fi
	rc1=$(cpu_ticks "$REDIS_PID")
	r1=$(redis_calls)
	[[ -n $pid ]] && c1=$(cpu_ticks "$pid")
	[[ -n $adm ]] && m1=$(metric "$adm" go_memstats_mallocs_total) && t1=$(metric "$adm" mcpfleet_redis_round_trips_total)
	local reqs p50 p99 non
	if [[ $proto == h1 ]]; then
		read -r reqs p50 p99 non < <(awk '
			function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
			/requests in/ {reqs=$1} /^ +50%/ {p50=ms($2)} /^ +99%/ {p99=ms($2)} /Non-2xx/ {non=$NF}
			END {print reqs + 0, p50 + 0, p99 + 0, non + 0}' "$WORK/out.txt")
	else
		non=$(awk -F'\t' '$2 !~ /^2/ {n++} END {print n + 0}' "$WORK/h2.log")
		read -r reqs p50 p99 < <(awk -F'\t' '{print $3 / 1000}' "$WORK/h2.log" | sort -n | awk '{v[NR] = $1}
			function at(q,   i) { i = int(NR * q + 0.5); return v[i < 1 ? 1 : i] }
			END {if (NR == 0) print 0, 0, 0; else print NR, at(0.50), at(0.99)}')
	fi
	awk -v proto="$proto" -v r="$round" -v n="$n" -v reqs="$reqs" -v p50="$p50" -v p99="$p99" -v non="$non" -v tick="$TICK" \
		-v c="$([[ -n $pid ]] && echo $((c1 - c0)) || echo -)" -v m="$((m1 - m0))" -v t="$((t1 - t0))" -v rc="$((rc1 - rc0))" -v d="$d" \
		-v before="$r0" -v after="$r1" -v gen="$(cat "$WORK/time.txt" | tail -1)" -v adm="$adm" 'BEGIN {
			nb = split(before, b, "\n"); for (i = 1; i <= nb; i++) {split(b[i], f, " "); was[f[1]] = f[2]}
			na = split(after, a, "\n"); for (i = 1; i <= na; i++) {split(a[i], f, " "); dc = f[2] - was[f[1]]; if (dc > 0) {cmds += dc; by[f[1]] = dc}}
			split(gen, g, " ")
			if (reqs <= 0) reqs = 1
			list = ""; for (k in by) if (by[k] / reqs >= 0.005) list = list sprintf("%s%s %.2f", (list == "" ? "" : ", "), k, by[k] / reqs)
			printf "%s\t%s\t%s\t%d\t%s\t%.2f\t%.2f\t%s\t%.2f\t%s\t%.1f\t%d\t%.2f\t%s\n", proto, r, n, reqs,
				(c == "-" ? "-" : sprintf("%.1f", c * 1e6 / tick / reqs)), p50, p99,
				(adm == "" ? "-" : sprintf("%.1f", m / reqs)), cmds / reqs, (adm == "" ? "-" : sprintf("%.2f", t / reqs)),
				rc * 1e6 / tick / reqs, non, (g[1] + g[2]) / d, (list == "" ? "-" : list)}' | tee -a "$WORK/runs.tsv"
	[[ $non -eq 0 ]] || log "$proto $n: $non answers were not 2xx"
}

for proto in $PROTOCOLS; do
	scheme=http
	[[ $proto == h2 ]] && scheme=https
	NAMES=()
	GWPIDS=()
	for n in "${RUN[@]}"; do
		[[ $proto == h2 ]] && in_list "$n" "${H1_ONLY[@]}" && continue
		port_of "PORT[$n]"
		port_of "ADMIN[$n]"
		"$WORK/mcpfleet" serve --config "$(write_config "$n" "$proto" "${PORT[$n]}" "${ADMIN[$n]}")" >"$WORK/$n-$proto.log" 2>&1 &
		PID[$n]=$!
		PIDS+=($!)
		GWPIDS+=($!)
		NAMES+=("$n")
	done
	for n in "${NAMES[@]}"; do wait_port "${PORT[$n]}" || { tail -5 "$WORK/$n-$proto.log" >&2; exit 1; }; done
	sleep 1 # the tool listing at start: echo is known read-only before the first call
	LUA[direct]=$(lua direct fixed tok-1)
	printf '{"jsonrpc":"2.0","id":1,%s' "$CALL" >"$WORK/direct.body"
	for n in "${NAMES[@]}"; do
		url="$scheme://127.0.0.1:${PORT[$n]}/mcp"
		tok=tok-1
		[[ $n == jwt* || $n == all ]] && tok=$TOKEN_JWT
		kind=$(load_of "$n" "$proto")
		sid=""
		[[ $kind == legacy ]] && { sid=$(initialize "$url" "$tok"); [[ -n $sid ]] || { log "$n: initialize gave no session"; exit 1; }; }
		LUA[$n]=$(lua "$n-$proto" "$kind" "$tok" "$sid")
		if [[ $kind == legacy ]]; then
			printf '%s' "$LEGACY" >"$WORK/$n.body"
		else
			printf '{"jsonrpc":"2.0","id":1,%s' "$CALL" >"$WORK/$n.body"
		fi
		# Every gateway answers one call of its load before it is measured,
		# after a tools/list through it: the gateway learns that echo is
		# read-only (readOnlyHint) from the lists it relays.
		out=$(curl -sSk -m 5 "$url" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
			-H "Authorization: Bearer $tok" -H 'Mcp-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \
			--data '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' 2>&1) || true
		grep -q readOnlyHint <<<"$out" || { log "tools/list through $proto $n failed: $(tail -c 300 <<<"$out")"; exit 1; }
		headers "$kind" "$tok" "$sid"
		out=$(curl -sSk -m 5 "$url" "${HDR[@]}" --data @"$WORK/$n.body" 2>&1) || true
		grep -q '"result"' <<<"$out" || { log "check $proto $n failed: $(tail -c 300 <<<"$out")"; exit 1; }
		SID[$n]=$sid
		TOK[$n]=$tok
	done
	for round in $(seq "$ROUNDS"); do
		log "$proto round $round of $ROUNDS"
		headers fixed tok-1
		measure "$proto" "$round" direct "http://127.0.0.1:${B[0]}/mcp"
		for n in "${NAMES[@]}"; do
			headers "$(load_of "$n" "$proto")" "${TOK[$n]}" "${SID[$n]}"
			measure "$proto" "$round" "$n" "$scheme://127.0.0.1:${PORT[$n]}/mcp"
		done
	done
	for p in "${GWPIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${GWPIDS[@]}"; do wait "$p" 2>/dev/null || true; done
done

# The medians of every column per protocol and feature; then the tables.
awk -F'\t' -v built="${RUN[*]}" -v missing="${NOT_YET_BUILT[*]}" -v h1only="${H1_ONLY[*]}" -v order="${FEATURES[*]}" -v rounds="$ROUNDS" '
	function med(k, col,   i, j, t, v, n) { n = cnt[k]; if (vals[k, 1, col] == "-") return "-"
		for (i = 1; i <= n; i++) v[i] = vals[k, i, col] + 0
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) {t = v[i]; v[i] = v[j]; v[j] = t}
		return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
	NR > 1 {k = $1 SUBSEP $3; cnt[k]++; for (c = 4; c <= 13; c++) vals[k, cnt[k], c] = $c; cmdlist[k] = $14}
	function row(p, f,   k, d, cpu, none) { k = p SUBSEP f; d = p SUBSEP "direct"
		if (!(k in cnt)) return 0
		cpu = med(k, 5); none = med(p SUBSEP "none", 5)
		printf "| `%s` | %.0f | %s | %.2f | %.2f | %s | %.2f | %s | %.0f | %.2f | %s |\n", f, cpu,
			(none > 0 ? sprintf("%.2fx", cpu / none) : "-"), med(k, 6) - med(d, 6), med(k, 7) - med(d, 7),
			(med(k, 8) == "-" ? "-" : sprintf("%.0f", med(k, 8))), med(k, 9), med(k, 10), med(k, 11), med(k, 13), cmdlist[k]
		return 1 }
	END {n = split(order, fs, " "); split(missing, ms, " "); for (i in ms) nyb[ms[i]] = 1; split(h1only, hs, " "); for (i in hs) h1[hs[i]] = 1
		for (pi = 1; pi <= 2; pi++) { p = (pi == 1 ? "h1" : "h2")
			if (!((p SUBSEP "none") in cnt)) continue
			printf "\n%s, medians of %d rounds; direct: p50 %.2f ms, p99 %.2f ms, %.2f load generator cores\n\n", (p == "h1" ? "HTTP/1.1 (wrk -t1)" : "HTTP/2 over TLS (h2load -m 1)"),
				rounds, med(p SUBSEP "direct", 6), med(p SUBSEP "direct", 7), med(p SUBSEP "direct", 13)
			print "| feature | CPU µs/call | vs none | p50 added ms | p99 added ms | allocs/call | Redis commands/call | round trips/call | Redis CPU µs/call | load generator cores | commands |"
			print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
			for (i = 1; i <= n; i++) { f = fs[i]
				if (row(p, f)) continue
				if (f in nyb) printf "| `%s` | not yet built |\n", f
				else if (p == "h2" && (f in h1)) printf "| `%s` | HTTP/1.1 only: h2load sends one request |\n", f
			}
		}}' "$WORK/runs.tsv" | tee "$WORK/tables.md"
if [[ -n ${OUT:-} ]]; then
	mkdir -p "$OUT"
	cp "$WORK/runs.tsv" "$WORK/tables.md" "$OUT/"
fi
