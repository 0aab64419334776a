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
# file and mcpfleet runs at --log-level info, a line per request to a file),
# STRACE (set, with ACCESS_LOG: after the rounds, each target's system calls
# per request, by strace -c -f over a 2 s wrk run, the requests counted by
# the access log's lines; nginx's worker is the one traced).
# LIGHT (set: the light load generator, whose figures are the ones of
# record: one wrk thread and one fixed request, a tools/call with one bearer
# token and one id, built once, so that wrk does not take most of the
# machine; unset: two threads and a Lua function that builds each request
# with its own token and id).
# Allocations per request are each mcpfleet's go_memstats_mallocs_total
# (its admin listener) over a run, divided by its requests. The load
# generator's own CPU share (user+system time over the run, as a share of
# all the machine's cores) is printed beside each run. A second table splits
# each target's CPU per request into user and system time and counts its
# threads' context switches per request (from /proc), medians of the rounds.
# FLOOR (set: also run bench/floor, the least a Go proxy with a goroutine
# per connection costs a request, as the target "floor", built from this
# tree: docs/BENCHMARKS.md, "The floor of a goroutine per connection").
set -euo pipefail

[[ $# -gt 0 ]] || { sed -n '2,18p' "$0" >&2; exit 2; }
ROUNDS=${ROUNDS:-3}
DUR=${DURATION:-6s}
CONNS=${CONNECTIONS:-32}
LEVEL=warn
[[ -n ${ACCESS_LOG:-} ]] && LEVEL=info
THREADS=2
[[ -n ${LIGHT:-} ]] && THREADS=1
NCPU=$(nproc)
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

declare -A PORT PID ADMIN
NAMES=()
SPECS=("$@")
if [[ -n ${FLOOR:-} ]]; then
	(cd "$ROOT" && go build -o "$WORK/floor" ./bench/floor)
	SPECS+=("floor=$WORK/floor")
fi
for spec in "${SPECS[@]}"; do
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
	ADMIN[$name]=$(free_port)
	env ${gogc:+GOGC=$gogc} "${envs[@]}" "$bin" serve --listen "127.0.0.1:${PORT[$name]}" --admin "127.0.0.1:${ADMIN[$name]}" \
		--health-check-interval 0 --log-level "$LEVEL" "${UPS[@]}" >"$WORK/$name.log" 2>&1 &
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
if [[ -n ${LIGHT:-} ]]; then
	cat >"$WORK/a.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
wrk.headers["Host"] = "127.0.0.1"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Mcp-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "echo"
wrk.headers["Authorization"] = "Bearer tok-1"
LUA
fi

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# cpu_split PID: its user and system ticks, then the voluntary and involuntary
# context switches of all its threads (a thread that sleeps and is woken,
# one that is preempted).
cpu_split() {
	awk '{printf "%s %s", $14, $15}' "/proc/$1/stat"
	cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ {v += $2} /^nonvoluntary_ctxt_switches/ {n += $2} END {printf " %d %d\n", v, n}'
}
# mallocs N: the Go allocations of target N so far; "" for nginx.
mallocs() {
	[[ -n ${ADMIN[$1]:-} ]] || return 0
	curl -s "http://127.0.0.1:${ADMIN[$1]}/metrics" | awk '/^go_memstats_mallocs_total /{printf "%.0f", $2}'
}
TICK=$(getconf CLK_TCK)
printf 'round\ttarget\treq_per_s\tp50\tp99\tcpu_us_per_req\tallocs_per_req\tloadgen_cpu_pct\n' >"$WORK/runs.tsv"
for round in $(seq "$ROUNDS"); do
	for n in "${NAMES[@]}"; do
		c0=$(cpu_ticks "${PID[$n]}")
		m0=$(mallocs "$n")
		read -r u0 s0 v0 i0 < <(cpu_split "${PID[$n]}")
		loadgen "$WORK/wrk.txt" wrk -t"$THREADS" -c"$CONNS" -d"$DUR" --latency -s "$WORK/a.lua" "http://127.0.0.1:${PORT[$n]}/mcp" || true
		c1=$(cpu_ticks "${PID[$n]}")
		m1=$(mallocs "$n")
		read -r u1 s1 v1 i1 < <(cpu_split "${PID[$n]}")
		awk -v r="$round" -v n="$n" -v u="$((u1 - u0))" -v s="$((s1 - s0))" -v v="$((v1 - v0))" -v i="$((i1 - i0))" -v tick="$TICK" '
			/requests in/ {reqs=$1}
			END {if (reqs > 0) printf "%s\t%s\t%.1f\t%.1f\t%.2f\t%.2f\n", r, n, u * 1e6 / tick / reqs, s * 1e6 / tick / reqs, v / reqs, i / reqs}' \
			"$WORK/wrk.txt" >>"$WORK/split.tsv"
		awk -v r="$round" -v n="$n" -v c="$((c1 - c0))" -v tick="$TICK" -v m0="$m0" -v m1="$m1" \
			-v lg="$(cat "$WORK/loadgen.cpu")" -v dur="${DUR%s}" -v ncpu="$NCPU" '
			function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
			/requests in/ {reqs=$1} /Requests\/sec/ {rps=$2} /^ +50%/ {p50=ms($2)} /^ +99%/ {p99=ms($2)}
			END {printf "%s\t%s\t%.0f\t%.2f\t%.2f\t%.0f\t%s\t%.0f\n", r, n, rps, p50, p99, (reqs > 0 ? c * 1e6 / tick / reqs : 0),
				(m0 != "" && reqs > 0 ? sprintf("%.1f", (m1 - m0) / reqs) : "-"), lg * 100 / dur / ncpu}' "$WORK/wrk.txt" | tee -a "$WORK/runs.tsv"
	done
done
echo
echo "== medians over $ROUNDS rounds (req/s, p50 ms, p99 ms, CPU us per request, allocations per request, load generator's CPU %) =="
awk -F'\t' 'NR>1 {k=$2; if (!(k in c)) o[++m]=k; c[k]++; r[k,c[k]]=$3; q[k,c[k]]=$4; p[k,c[k]]=$5; u[k,c[k]]=$6; a[k,c[k]]=$7; g[k,c[k]]=$8}
	function med(a, k, n,   i, j, t, v) { for (i=1;i<=n;i++) v[i]=a[k,i]+0
		for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (v[j]<v[i]) {t=v[i]; v[i]=v[j]; v[j]=t}
		return (n%2) ? v[(n+1)/2] : (v[n/2]+v[n/2+1])/2 }
	END {for (i=1;i<=m;i++) {k=o[i]; printf "%s\t%.0f\t%.2f\t%.2f\t%.0f\t%s\t%.0f\n", k, med(r,k,c[k]), med(q,k,c[k]), med(p,k,c[k]), med(u,k,c[k]),
		(a[k,1] == "-" ? "-" : sprintf("%.1f", med(a,k,c[k]))), med(g,k,c[k])}}' "$WORK/runs.tsv" | column -t -s $'\t'
echo
echo "== where the CPU goes, medians (user us, system us, voluntary and involuntary context switches, per request) =="
awk -F'\t' '{k=$2; if (!(k in c)) o[++m]=k; c[k]++; u[k,c[k]]=$3; s[k,c[k]]=$4; v[k,c[k]]=$5; i[k,c[k]]=$6}
	function med(a, k, n,   i, j, t, v) { for (i=1;i<=n;i++) v[i]=a[k,i]+0
		for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (v[j]<v[i]) {t=v[i]; v[i]=v[j]; v[j]=t}
		return (n%2) ? v[(n+1)/2] : (v[n/2]+v[n/2+1])/2 }
	END {for (x=1;x<=m;x++) {k=o[x]; printf "%s\t%.1f\t%.1f\t%.2f\t%.2f\n", k, med(u,k,c[k]), med(s,k,c[k]), med(v,k,c[k]), med(i,k,c[k])}}' \
	"$WORK/split.tsv" | column -t -s $'\t'

if [[ -n ${FLOOR:-} ]]; then
	echo
	echo "== over the floor: each target's CPU per request minus the floor's in the same round, and nginx's over it, median and range over the rounds (us) =="
	# Paired by round, so that what the machine did in a round moves both
	# sides alike: the gateway's own work per request, less noisy than a
	# ratio to nginx (docs/BENCHMARKS.md, "The floor of a goroutine per
	# connection").
	awk -F'\t' 'NR>1 {cpu[$1,$2]=$6; if (!($2 in seen)) {seen[$2]=1; o[++m]=$2}; if ($1>r) r=$1}
		function med(v, n,   i, j, t) { for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (v[j]<v[i]) {t=v[i]; v[i]=v[j]; v[j]=t}
			return (n%2) ? v[(n+1)/2] : (v[n/2]+v[n/2+1])/2 }
		END {for (i=1;i<=m;i++) {k=o[i]; if (k=="floor") continue; n=0
			for (x=1;x<=r;x++) if (((x,k) in cpu) && ((x,"floor") in cpu)) d[++n]=cpu[x,k]-cpu[x,"floor"]
			if (n==0) continue
			lo=d[1]; hi=d[1]; for (x=2;x<=n;x++) {if (d[x]<lo) lo=d[x]; if (d[x]>hi) hi=d[x]}
			printf "%s\t%+.0f\t%+.0f..%+.0f\n", k, med(d,n), lo, hi; delete d}}' "$WORK/runs.tsv" | column -t -s $'\t'
fi

[[ -n ${STRACE:-} && -n ${ACCESS_LOG:-} ]] || exit 0
command -v strace >/dev/null || { echo "strace not found (apt-get install strace): no system call counts" >&2; exit 0; }
# lines N: the access log lines target N has written so far.
lines() {
	if [[ $1 == nginx ]]; then
		cat "$WORK"/nginx/"${PORT[nginx]}"/access.log 2>/dev/null | wc -l
	else
		grep -c '"msg":"request"' "$WORK/$1.log" || true
	fi
}
echo
echo "== system calls per request (strace -c -f over 2 s of wrk's load) =="
for n in "${NAMES[@]}"; do
	# strace is attached before the load starts and detached after its
	# last line is logged: every request counted is traced, with the idle
	# moments around it (a few timer calls).
	strace -c -f -p "${PID[$n]}" -o "$WORK/strace-$n.txt" 2>/dev/null &
	s=$!
	sleep 1
	l0=$(lines "$n")
	wrk -t"$THREADS" -c"$CONNS" -d2s -s "$WORK/a.lua" "http://127.0.0.1:${PORT[$n]}/mcp" >/dev/null 2>&1 || true
	sleep 0.2 # the last lines reach the log (mcpfleet writes its log every 10 ms)
	l1=$(lines "$n")
	kill -INT "$s" 2>/dev/null || true
	wait "$s" || true
	awk -v n="$n" -v reqs="$((l1 - l0))" '
		$NF != "total" && $4 ~ /^[0-9]+$/ {calls=$4; errs=($5 ~ /^[0-9]+$/ ? $5 : 0); name=$NF; tot+=calls; c[name]=calls; e[name]=errs}
		END {if (reqs <= 0) {print n ": no request counted"; exit}
			printf "%s\t%.2f per request (%d requests):", n, tot / reqs, reqs
			for (k in c) if (c[k] / reqs >= 0.01) printf " %s %.2f%s", k, c[k] / reqs, (e[k] > 0 ? sprintf(" (%.2f failed)", e[k] / reqs) : "")
			printf "\n"}' "$WORK/strace-$n.txt"
done
