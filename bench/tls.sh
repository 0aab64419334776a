#!/usr/bin/env bash
# bench/tls.sh: mcpfleet over TLS against nginx over TLS, in one run on
# loopback (docs/BENCHMARKS.md, "TLS").
#
#   bench/tls.sh [NAME=BINARY[:SERVER]] ...
#
# Makes a self-signed ECDSA P-256 certificate (openssl), starts three canned
# backends and, in front of them:
#   mcpfleet-tls   mcpfleet serve --server std with that certificate
#   nginx-tls      nginx (bench/lib.sh's config, worker_processes 1) with the
#                  same certificate, TLS 1.3 pinned to the suite Go picks
#   mcpfleet       mcpfleet serve, plaintext, server h1 (the default)
#   mcpfleet-std   mcpfleet serve --server std, plaintext
#   nginx          the same nginx without TLS
# and every NAME=BINARY given, served over TLS with --server SERVER (default
# std), to compare builds. Then ROUNDS rounds of wrk with scenario (a)'s load
# (2026-07-28 tools/call, a bearer token per request; wrk speaks HTTP/1.1,
# over https for the TLS targets), each round visiting every target in turn.
# Prints, per run, requests/s, p99 and the target's CPU per request
# (user+system time over the run divided by its requests; nginx's worker),
# then the medians. Then, when h2load (Debian's nghttp2-client) is there,
# the same rounds over HTTP/2 against every TLS target: h2load with
# CONNECTIONS connections of STREAMS streams each, the same call (one
# bearer token: h2load sends one set of headers), requests/s, mean latency
# and CPU per request, then the medians. Everything it starts is killed on
# exit; loopback only.
#
# Env: ROUNDS (3), DURATION (5s), CONNECTIONS (32), STREAMS (8),
#      TARGETS ("mcpfleet-tls nginx-tls mcpfleet mcpfleet-std nginx"),
#      PROTOCOLS ("h1 h2": wrk's rounds, h2load's rounds, or both),
#      ACCESS_LOG (set: nginx writes its combined access log to a file and
#      mcpfleet runs at --log-level info, a line per request to a file).
# The load generator's own CPU share (user+system time over the run, as a
# share of all the machine's cores) is printed beside each run.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DUR=${DURATION:-5s}
CONNS=${CONNECTIONS:-32}
STREAMS=${STREAMS:-8}
TARGETS=${TARGETS:-"mcpfleet-tls nginx-tls mcpfleet mcpfleet-std nginx"}
PROTOCOLS=${PROTOCOLS:-"h1 h2"}
LEVEL=warn
[[ -n ${ACCESS_LOG:-} ]] && LEVEL=info
NCPU=$(nproc)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
own_scratch tls

log "building into $WORK"
(cd "$ROOT" && go build -o "$WORK/canned" ./bench/canned && go build -o "$WORK/mcpfleet" ./cmd/mcpfleet)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
	-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
TLSFLAGS=(--tls-cert-file "$WORK/cert.pem" --tls-key-file "$WORK/key.pem")

B=()
for i in 1 2 3; do
	p=$(free_port)
	B+=("$p")
	"$WORK/canned" --listen "127.0.0.1:$p" >/dev/null 2>&1 &
	PIDS+=($!)
done
for p in "${B[@]}"; do wait_port "$p"; done
UPS=()
for p in "${B[@]}"; do UPS+=(--upstream "http://127.0.0.1:$p/mcp"); done

declare -A PORT PID SCHEME
GW=(serve --health-check-interval 0 --log-level "$LEVEL" "${UPS[@]}")
# start NAME SCHEME CMD...: one target in the background; "@" in CMD
# becomes its port.
start() {
	local name=$1 scheme=$2 port
	shift 2
	port=$(free_port)
	PORT[$name]=$port
	SCHEME[$name]=$scheme
	"${@//@/$port}" >"$WORK/$name.log" 2>&1 &
	PID[$name]=$!
	PIDS+=($!)
}
CERT="$WORK/cert.pem:$WORK/key.pem"
for t in $TARGETS; do
	case $t in
	mcpfleet-tls) start "$t" https "$WORK/mcpfleet" "${GW[@]}" --listen 127.0.0.1:@ --server std "${TLSFLAGS[@]}" ;;
	mcpfleet) start "$t" http "$WORK/mcpfleet" "${GW[@]}" --listen 127.0.0.1:@ ;;
	mcpfleet-std) start "$t" http "$WORK/mcpfleet" "${GW[@]}" --listen 127.0.0.1:@ --server std ;;
	nginx-tls)
		p=$(free_port)
		start "$t" https nginx -c "$(NGINX_TLS=$CERT nginx_conf "$p" "${B[@]}")"
		PORT[$t]=$p
		;;
	nginx)
		p=$(free_port)
		start "$t" http nginx -c "$(nginx_conf "$p" "${B[@]}")"
		PORT[$t]=$p
		;;
	*) echo "unknown target $t" >&2; exit 2 ;;
	esac
done
NAMES=($TARGETS)
for spec in "$@"; do
	name=${spec%%=*}
	rest=${spec#*=}
	bin=${rest%%:*}
	server=std
	[[ $rest == *:* ]] && server=${rest#*:}
	[[ -x $bin ]] || { echo "not an executable: $bin" >&2; exit 2; }
	start "$name" https "$bin" "${GW[@]}" --listen 127.0.0.1:@ --server "$server" "${TLSFLAGS[@]}"
	NAMES+=("$name")
done
for n in "${NAMES[@]}"; do wait_port "${PORT[$n]}"; done
# nginx's master forks its worker, which does the work: count the worker.
sleep 0.5
for n in "${NAMES[@]}"; do
	if [[ $n == nginx* ]]; then
		w=$(pgrep -P "${PID[$n]}" | head -1)
		[[ -n $w ]] && PID[$n]=$w
	fi
done

cat >"$WORK/a.lua" <<'LUA'
local body = '","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
local n = 0
local t = string.sub(tostring({}), 8)
request = function()
  n = n + 1
  local h = { ["Host"] = "127.0.0.1", ["Content-Type"] = "application/json", ["Accept"] = "application/json, text/event-stream",
    ["Mcp-Protocol-Version"] = "2026-07-28", ["Mcp-Method"] = "tools/call", ["Mcp-Name"] = "echo",
    ["Authorization"] = "Bearer tok-" .. (n % 1024) }
  return wrk.format("POST", "/mcp", h, '{"jsonrpc":"2.0","id":"' .. t .. '-' .. n .. body)
end
LUA

# Every target must answer one call before it is measured; the TLS ones
# also say what they negotiated.
for n in "${NAMES[@]}"; do
	url="${SCHEME[$n]}://127.0.0.1:${PORT[$n]}/mcp"
	out=$(curl -sSk -m 5 -v --http1.1 "$url" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		-H 'Mcp-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' -H 'Authorization: Bearer tok-1' \
		--data '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' 2>&1) || true
	grep -q '"result"' <<<"$out" || { log "check $n failed: $(tail -c 400 <<<"$out")"; exit 1; }
	[[ ${SCHEME[$n]} == https ]] && log "$n: $(grep -m1 'SSL connection using' <<<"$out" | sed 's/^\* //')"
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)
printf 'round\ttarget\treq_per_s\tp99\tcpu_us_per_req\tloadgen_cpu_pct\n' >"$WORK/runs.tsv"
[[ " $PROTOCOLS " == *" h1 "* ]] || ROUNDS_H1=0
for round in $(seq "${ROUNDS_H1:-$ROUNDS}"); do
	for n in "${NAMES[@]}"; do
		c0=$(cpu_ticks "${PID[$n]}")
		loadgen "$WORK/wrk.txt" timeout 120 wrk -t2 -c"$CONNS" -d"$DUR" --latency -s "$WORK/a.lua" "${SCHEME[$n]}://127.0.0.1:${PORT[$n]}/mcp" || true
		c1=$(cpu_ticks "${PID[$n]}")
		awk -v r="$round" -v n="$n" -v c="$((c1 - c0))" -v tick="$TICK" \
			-v lg="$(cat "$WORK/loadgen.cpu")" -v dur="${DUR%s}" -v ncpu="$NCPU" '
			function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
			/requests in/ {reqs=$1} /Requests\/sec/ {rps=$2} /^ +99%/ {p99=ms($2)} /Non-2xx/ {non=$NF}
			END {if (non > 0) printf "%s: %s non-2xx answers\n", n, non > "/dev/stderr"
				printf "%s\t%s\t%.0f\t%.2f\t%.0f\t%.0f\n", r, n, rps, p99, (reqs > 0 ? c * 1e6 / tick / reqs : 0), lg * 100 / dur / ncpu}' "$WORK/wrk.txt" | tee -a "$WORK/runs.tsv"
	done
done
if [[ -z ${ROUNDS_H1:-} ]]; then
echo
echo "== medians over $ROUNDS rounds of $DUR, $CONNS connections (req/s, p99 ms, CPU us per request, load generator's CPU %) =="
awk -F'\t' 'NR>1 {k=$2; if (!(k in c)) o[++m]=k; c[k]++; r[k,c[k]]=$3; p[k,c[k]]=$4; u[k,c[k]]=$5; g[k,c[k]]=$6}
	function med(a, k, n,   i, j, t, v) { for (i=1;i<=n;i++) v[i]=a[k,i]+0
		for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (v[j]<v[i]) {t=v[i]; v[i]=v[j]; v[j]=t}
		return (n%2) ? v[(n+1)/2] : (v[n/2]+v[n/2+1])/2 }
	END {printf "target\treq_per_s\tp99_ms\tcpu_us_per_req\tloadgen_cpu_pct\n"
		for (i=1;i<=m;i++) {k=o[i]; printf "%s\t%.0f\t%.2f\t%.0f\t%.0f\n", k, med(r,k,c[k]), med(p,k,c[k]), med(u,k,c[k]), med(g,k,c[k])}}' "$WORK/runs.tsv" | column -t -s $'\t'
fi

[[ " $PROTOCOLS " == *" h2 "* ]] || exit 0
command -v h2load >/dev/null || { log "h2load not found (apt-get install nghttp2-client): HTTP/2 not measured"; exit 0; }
BODY='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
printf '%s' "$BODY" >"$WORK/body.json"
printf 'round\ttarget\treq_per_s\tmean_ms\tcpu_us_per_req\tloadgen_cpu_pct\n' >"$WORK/h2.tsv"
for round in $(seq "$ROUNDS"); do
	for n in "${NAMES[@]}"; do
		[[ ${SCHEME[$n]} == https ]] || continue
		c0=$(cpu_ticks "${PID[$n]}")
		loadgen "$WORK/h2load.txt" timeout 120 h2load -D "${DUR%s}" -c "$CONNS" -m "$STREAMS" -d "$WORK/body.json" \
			-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
			-H 'Mcp-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' -H 'Authorization: Bearer tok-1' \
			"https://127.0.0.1:${PORT[$n]}/mcp" || true
		c1=$(cpu_ticks "${PID[$n]}")
		awk -v r="$round" -v n="$n" -v c="$((c1 - c0))" -v tick="$TICK" \
			-v lg="$(cat "$WORK/loadgen.cpu")" -v dur="${DUR%s}" -v ncpu="$NCPU" '
			function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
			/^finished in/ {rps=$4} /^requests:/ {done=$6} /^status codes:/ {ok=$3}
			/^time for request:/ {mean=ms($6)}
			END {if (ok < done) printf "%s: %s requests done, %s 2xx\n", n, done, ok > "/dev/stderr"
				printf "%s\t%s\t%.0f\t%.2f\t%.0f\t%.0f\n", r, n, rps, mean, (done > 0 ? c * 1e6 / tick / done : 0), lg * 100 / dur / ncpu}' "$WORK/h2load.txt" | tee -a "$WORK/h2.tsv"
	done
done
echo
echo "== HTTP/2 (h2load), medians over $ROUNDS rounds of $DUR, $CONNS connections x $STREAMS streams (req/s, mean ms, CPU us per request, load generator's CPU %) =="
awk -F'\t' 'NR>1 {k=$2; if (!(k in c)) o[++m]=k; c[k]++; r[k,c[k]]=$3; p[k,c[k]]=$4; u[k,c[k]]=$5; g[k,c[k]]=$6}
	function med(a, k, n,   i, j, t, v) { for (i=1;i<=n;i++) v[i]=a[k,i]+0
		for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (v[j]<v[i]) {t=v[i]; v[i]=v[j]; v[j]=t}
		return (n%2) ? v[(n+1)/2] : (v[n/2]+v[n/2+1])/2 }
	END {printf "target\treq_per_s\tmean_ms\tcpu_us_per_req\tloadgen_cpu_pct\n"
		for (i=1;i<=m;i++) {k=o[i]; printf "%s\t%.0f\t%.2f\t%.0f\t%.0f\n", k, med(r,k,c[k]), med(p,k,c[k]), med(u,k,c[k]), med(g,k,c[k])}}' "$WORK/h2.tsv" | column -t -s $'\t'
