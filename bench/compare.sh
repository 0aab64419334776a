#!/usr/bin/env bash
# bench/compare.sh: builds of mcpfleet side by side with nginx (docs/BENCHMARKS.md,
# "How it got here").
#
#   bench/compare.sh NAME=BINARY[:GOGC][,VAR=VALUE...] ...
#
# VAR=VALUE pairs after a comma are that target's environment; OTLP_SINK in a
# value is replaced by the URL of a discarding OTLP/HTTP receiver the script
# starts (canned --otlp-sink), e.g. for a traced gateway:
#   traced=/tmp/mcpfleet,OTEL_EXPORTER_OTLP_ENDPOINT=OTLP_SINK
#
# Starts three canned backends, every given mcpfleet binary (GOGC as given,
# else unset) and nginx in the GitLab MCP server's load-balancing guide's configuration, then runs ROUNDS rounds of
# wrk with scenario (a)'s load (2026-07-28 tools/call, a bearer token per
# request), each round visiting every target in turn. Prints, per run,
# requests/s, p99 and the target's CPU per request (user+system time over the
# run divided by its requests), then the medians. Everything it starts is
# killed on exit; loopback only.
#
# Build a commit's binary with, e.g.:
#   git worktree add /tmp/wt COMMIT && (cd /tmp/wt && go build -o /tmp/mcpfleet-COMMIT ./cmd/mcpfleet)
#
# Env: ROUNDS (3), DURATION (6s), CONNECTIONS (32), ACCESS_LOG (unset: no
# access log anywhere; set: nginx writes its default combined access log to a
# file and mcpfleet runs at --log-level info, a line per request to a file).
set -euo pipefail

[[ $# -gt 0 ]] || { sed -n '2,18p' "$0" >&2; exit 2; }
ROUNDS=${ROUNDS:-3}
DUR=${DURATION:-6s}
CONNS=${CONNECTIONS:-32}
LEVEL=warn
[[ -n ${ACCESS_LOG:-} ]] && LEVEL=info
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
own_scratch compare

(cd "$ROOT" && go build -o "$WORK/canned" ./bench/canned)
B=()
for i in 1 2 3; do
	p=$(free_port)
	B+=("$p")
	"$WORK/canned" --listen "127.0.0.1:$p" >/dev/null 2>&1 &
	PIDS+=($!)
done
for p in "${B[@]}"; do wait_port "$p"; done
SINK_PORT=$(free_port)
"$WORK/canned" --otlp-sink --listen "127.0.0.1:$SINK_PORT" >/dev/null 2>&1 &
PIDS+=($!)
wait_port "$SINK_PORT"
UPS=()
for p in "${B[@]}"; do UPS+=(--upstream "http://127.0.0.1:$p/mcp"); done

declare -A PORT PID
NAMES=()
for spec in "$@"; do
	name=${spec%%=*}
	rest=${spec#*=}
	envs=()
	if [[ $rest == *,* ]]; then
		IFS=, read -r -a envs <<<"${rest#*,}"
		rest=${rest%%,*}
		envs=("${envs[@]//OTLP_SINK/http://127.0.0.1:$SINK_PORT}")
	fi
	bin=${rest%%:*}
	gogc=""
	[[ $rest == *:* ]] && gogc=${rest#*:}
	[[ -x $bin ]] || { echo "not an executable: $bin" >&2; exit 2; }
	PORT[$name]=$(free_port)
	env ${gogc:+GOGC=$gogc} "${envs[@]}" "$bin" serve --listen "127.0.0.1:${PORT[$name]}" --health-check-interval 0 --log-level "$LEVEL" "${UPS[@]}" >"$WORK/$name.log" 2>&1 &
	PID[$name]=$!
	PIDS+=($!)
	NAMES+=("$name")
done

PORT[nginx]=$(free_port)
nginx -c "$(nginx_conf "${PORT[nginx]}" "${B[@]}")" &
PID[nginx]=$!
PIDS+=($!)
NAMES+=(nginx)
for n in "${NAMES[@]}"; do wait_port "${PORT[$n]}"; done
# nginx's master forks its worker, which does the work: count the worker.
sleep 0.5
WORKER=$(pgrep -P "${PID[nginx]}" | head -1)
[[ -n $WORKER ]] && PID[nginx]=$WORKER

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

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)
printf 'round\ttarget\treq_per_s\tp99\tcpu_us_per_req\n' >"$WORK/runs.tsv"
for round in $(seq "$ROUNDS"); do
	for n in "${NAMES[@]}"; do
		c0=$(cpu_ticks "${PID[$n]}")
		wrk -t2 -c"$CONNS" -d"$DUR" --latency -s "$WORK/a.lua" "http://127.0.0.1:${PORT[$n]}/mcp" >"$WORK/wrk.txt" 2>&1 || true
		c1=$(cpu_ticks "${PID[$n]}")
		awk -v r="$round" -v n="$n" -v c="$((c1 - c0))" -v tick="$TICK" '
			function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
			/requests in/ {reqs=$1} /Requests\/sec/ {rps=$2} /^ +99%/ {p99=ms($2)}
			END {printf "%s\t%s\t%.0f\t%.2f\t%.0f\n", r, n, rps, p99, (reqs > 0 ? c * 1e6 / tick / reqs : 0)}' "$WORK/wrk.txt" | tee -a "$WORK/runs.tsv"
	done
done
echo
echo "== medians over $ROUNDS rounds (req/s, p99 ms, CPU us per request) =="
awk -F'\t' 'NR>1 {k=$2; if (!(k in c)) o[++m]=k; c[k]++; r[k,c[k]]=$3; p[k,c[k]]=$4; u[k,c[k]]=$5}
	function med(a, k, n,   i, j, t, v) { for (i=1;i<=n;i++) v[i]=a[k,i]+0
		for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (v[j]<v[i]) {t=v[i]; v[i]=v[j]; v[j]=t}
		return (n%2) ? v[(n+1)/2] : (v[n/2]+v[n/2+1])/2 }
	END {for (i=1;i<=m;i++) {k=o[i]; printf "%s\t%.0f\t%.2f\t%.0f\n", k, med(r,k,c[k]), med(p,k,c[k]), med(u,k,c[k])}}' "$WORK/runs.tsv" | column -t -s $'\t'
