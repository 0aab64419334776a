#!/usr/bin/env bash
# bench/rediscore.sh: what one redis-server core serves at saturation, for
# a PING and for the shared cache's lookup script on a hit (docs/DEPLOY.md,
# "Sizing"), to set beside the Redis CPU per call that bench/features.sh
# measures through a gateway at a few thousand calls a second.
#
# Starts a redis-server on loopback, keeps one cache entry as the cache's
# keeping script would ("GEN|value" under the entry's key, the generation
# key unset), loads the lookup script from internal/cache/rediscache's
# source, and runs redis-benchmark with CLIENTS connections: N PINGs, then
# N EVALSHAs of the script. For each: requests per second and the server's
# CPU per call (user+system time from /proc over the run, over N), and
# 1,000,000 µs divided by it, the calls one core serves. Everything it
# starts is killed on exit.
#
# Env: N (200000), CLIENTS (32).
set -euo pipefail

N=${N:-200000}
CLIENTS=${CLIENTS:-32}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
own_scratch rediscore

PORT=$(free_port)
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
REDIS=$!
PIDS+=($!)
wait_port "$PORT"
cli() { redis-cli -p "$PORT" "$@"; }
# The lookup script, as the Go source holds it between its backquotes.
awk '/^var getScript = redis.NewScript\(`/ {on=1; next} on && /^`\)/ {exit} on' \
	"$ROOT/internal/cache/rediscache/redis.go" >"$WORK/get.lua"
[[ -s $WORK/get.lua ]] || { log "no getScript in internal/cache/rediscache/redis.go"; exit 1; }
SHA=$(cli script load "$(cat "$WORK/get.lua")")
cli set 'bench:{c}:e' '0|{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}' px 3600000 >/dev/null
[[ $(cli evalsha "$SHA" 2 'bench:{c}:g' 'bench:{c}:e' | wc -l) -eq 4 ]] || { log "the lookup does not hit"; exit 1; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)
printf 'command\tcalls_per_s\tserver_cpu_us_per_call\tcalls_per_s_on_one_core\n'
for what in ping evalsha; do
	c0=$(cpu_ticks "$REDIS")
	if [[ $what == ping ]]; then
		redis-benchmark -p "$PORT" -c "$CLIENTS" -n "$N" -q -t ping_mbulk >"$WORK/out.txt" 2>&1
	else
		redis-benchmark -p "$PORT" -c "$CLIENTS" -n "$N" -q evalsha "$SHA" 2 'bench:{c}:g' 'bench:{c}:e' >"$WORK/out.txt" 2>&1
	fi
	c1=$(cpu_ticks "$REDIS")
	rps=$(tr '\r' '\n' <"$WORK/out.txt" | awk '/requests per second/ {for (i = 1; i <= NF; i++) if ($i == "requests") v = $(i - 1)} END {print v + 0}')
	awk -v w="$what" -v rps="$rps" -v c="$((c1 - c0))" -v tick="$TICK" -v n="$N" 'BEGIN {
		us = c * 1e6 / tick / n
		printf "%s\t%.0f\t%.1f\t%.0f\n", w, rps, us, (us > 0 ? 1e6 / us : 0)}'
done
