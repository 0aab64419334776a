#!/usr/bin/env bash
# bench/idle.sh: what an idle legacy stream costs the gateway (docs/BENCHMARKS.md,
# "Idle SSE streams held by the gateway").
#
#   bench/idle.sh NAME=BINARY ...
#
# Starts three testservers, then RUNS times, for each given mcpfleet binary in
# turn: a fresh gateway (--keepalive 0, an admin listener with pprof), its
# RSS and live heap (after a forced collection), N legacy sessions opened by
# bench/streams -mode hold (initialize, notifications/initialized, a GET
# stream) and held, then 2 s later its RSS and, after a forced collection,
# its live heap again. Prints per run the streams held and what each cost:
# RSS (VmRSS growth over the streams held) and live heap
# (go_memstats_heap_alloc_bytes growth), in KiB; then the worst of the runs.
# Everything it starts is killed on exit; loopback only.
#
# Env: RUNS (5), STREAMS (9000), WORKERS (64).
set -euo pipefail

[[ $# -gt 0 ]] || { sed -n '2,15p' "$0" >&2; exit 2; }
RUNS=${RUNS:-5}
N=${STREAMS:-9000}
WORKERS=${WORKERS:-64}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
own_scratch idle

(cd "$ROOT" && go build -o "$WORK/streams" ./bench/streams)
first=${1#*=}
T=()
for i in 1 2 3; do
	p=$(free_port)
	T+=("$p")
	"$first" testserver --listen "127.0.0.1:$p" --name "ts$i" >/dev/null 2>&1 &
	PIDS+=($!)
done
for p in "${T[@]}"; do wait_port "$p"; done
head -c 32 /dev/urandom | base64 >"$WORK/admin.token"
chmod 600 "$WORK/admin.token"
printf 'admin_pprof: true\nadmin_token_file: %s\n' "$WORK/admin.token" >"$WORK/pprof.yaml"

rss_kib() { awk '/VmRSS/{print $2}' "/proc/$1/status"; }
# live_bytes ADMIN: the heap after a forced collection.
live_bytes() {
	curl -sH "Authorization: Bearer $(cat "$WORK/admin.token")" "http://127.0.0.1:$1/debug/pprof/heap?gc=1" >/dev/null
	curl -s "http://127.0.0.1:$1/metrics" | awk '/^go_memstats_heap_alloc_bytes /{printf "%.0f", $2}'
}

printf 'run\ttarget\theld\tfailed\tkib_rss_per_stream\tkib_live_heap_per_stream\n' >"$WORK/runs.tsv"
for run in $(seq "$RUNS"); do
	for spec in "$@"; do
		name=${spec%%=*}
		bin=${spec#*=}
		gp=$(free_port)
		ap=$(free_port)
		"$bin" serve --config "$WORK/pprof.yaml" --listen "127.0.0.1:$gp" --admin "127.0.0.1:$ap" \
			--health-check-interval 0 --log-level warn --keepalive 0 --upstream "http://127.0.0.1:${T[0]}/mcp" \
			--upstream "http://127.0.0.1:${T[1]}/mcp" --upstream "http://127.0.0.1:${T[2]}/mcp" >"$WORK/gw.log" 2>&1 &
		gpid=$!
		PIDS+=($gpid)
		wait_port "$gp"
		wait_port "$ap"
		sleep 0.5
		rss0=$(rss_kib "$gpid")
		heap0=$(live_bytes "$ap")
		rss0=$(rss_kib "$gpid")
		"$WORK/streams" -mode hold -url "http://127.0.0.1:$gp/mcp" -n "$N" -workers "$WORKERS" -budget 60s -hold 120s >"$WORK/streams.log" 2>&1 &
		spid=$!
		PIDS+=($spid)
		for _ in $(seq 700); do grep -q '^held' "$WORK/streams.log" && break; sleep 0.1; done
		sleep 2
		rss1=$(rss_kib "$gpid")
		heap1=$(live_bytes "$ap")
		held=$(awk '/^held/{print $2}' "$WORK/streams.log")
		failed=$(awk '/^held/{print $4}' "$WORK/streams.log")
		awk -v r="$run" -v n="$name" -v h="${held:-0}" -v f="${failed:-?}" -v r0="$rss0" -v r1="$rss1" -v h0="$heap0" -v h1="$heap1" \
			'BEGIN {printf "%s\t%s\t%s\t%s\t%.1f\t%.1f\n", r, n, h, f, (h > 0 ? (r1 - r0) / h : 0), (h > 0 ? (h1 - h0) / 1024 / h : 0)}' |
			tee -a "$WORK/runs.tsv"
		kill "$spid" "$gpid" 2>/dev/null || true
		wait "$spid" "$gpid" 2>/dev/null || true
	done
done
echo
echo "== the worst of $RUNS runs of $N streams (KiB per stream: RSS, live heap) =="
awk -F'\t' 'NR>1 {k=$2; if (!(k in r)) o[++m]=k; if ($5 > r[k]) r[k]=$5; if ($6 > l[k]) l[k]=$6}
	END {for (i=1;i<=m;i++) printf "%s\t%.1f\t%.1f\n", o[i], r[o[i]], l[o[i]]}' "$WORK/runs.tsv" | column -t -s $'\t'
