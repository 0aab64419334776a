#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance,
# server mode) against
#   (a) one go-sdk everything-server replica, directly, and
#   (b) N everything-server replicas behind the mcpfleet gateway, and
#   (c) N everything-server children speaking stdio, a pooled stdio fleet
#       behind the gateway (serve --stdio),
# for each requirement set, print the totals side by side, and exit non-zero
# when the gateway changes the outcome, or when a check fails through the
# stdio fleet that passes over HTTP (for the sets in CONFORMANCE_STDIO_STRICT).
#
# See docs/CONFORMANCE.md for details. Environment knobs:
#   MCPFLEET_CACHE               cache root (default: $HOME/.cache/mcpfleet);
#                                Node + the suite live in $MCPFLEET_CACHE/conformance
#   CONFORMANCE_VERSION          suite version to install (default: 0.2.0-alpha.12)
#   CONFORMANCE_NODE_MAJOR       Node major version the suite runs on (default: 22)
#   CONFORMANCE_REQUIREMENTS     requirement sets (default: "2025-11-25 2026-07-28")
#   CONFORMANCE_REPLICAS         replicas behind the gateway (default: 3)
#   CONFORMANCE_RUN_TIMEOUT      seconds allowed per suite run (default: 600)
#   CONFORMANCE_DIRECT_ONLY=1    skip the gateway part if ./cmd/mcpfleet does not build
#   CONFORMANCE_STATELESS_<YYYYMMDD>=true|false
#                                override the everything-server mode for one
#                                requirement set (defaults: 20251125=false, others=true)
#   CONFORMANCE_PREWARM=0        do not pre-apply the suite's tool/prompt-list mutations
#                                to every stateless replica (see docs/CONFORMANCE.md)
#   CONFORMANCE_STDIO=0          skip the stdio fleet runs
#   CONFORMANCE_STDIO_STRICT     requirement sets whose stdio run must fail no check
#                                that passes over HTTP (default: "2025-11-25 2026-07-28"; the
#                                others are reported, see docs/CONFORMANCE.md)
#   CONFORMANCE_NGINX=1          also run the suite through nginx in round-robin in front
#                                of the same number of replicas, for comparison (installs
#                                Debian's nginx with apt-get when it is missing and we are root)
#   MCPFLEET_BIN                 use this gateway binary instead of building ./cmd/mcpfleet
#   CONFORMANCE_WORKDIR          put logs here instead of a fresh temp dir
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/node.sh
. "$REPO/scripts/lib/node.sh"
CACHE_ROOT="${MCPFLEET_CACHE:-$HOME/.cache/mcpfleet}/conformance"
SUITE_VERSION="${CONFORMANCE_VERSION:-0.2.0-alpha.12}"
NODE_MAJOR="${CONFORMANCE_NODE_MAJOR:-22}"
REQUIREMENTS="${CONFORMANCE_REQUIREMENTS:-2025-11-25 2026-07-28}"
REPLICAS="${CONFORMANCE_REPLICAS:-3}"
RUN_TIMEOUT="${CONFORMANCE_RUN_TIMEOUT:-600}"
DIRECT_ONLY="${CONFORMANCE_DIRECT_ONLY:-0}"
PREWARM="${CONFORMANCE_PREWARM:-1}"
NGINX="${CONFORMANCE_NGINX:-0}"
STDIO="${CONFORMANCE_STDIO:-1}"
STDIO_STRICT="${CONFORMANCE_STDIO_STRICT:-2025-11-25 2026-07-28}"
READY_TIMEOUT=30 # seconds to wait for a started process to become ready

log() { printf '[conformance] %s\n' "$*" >&2; }
die() {
	printf '[conformance] ERROR: %s\n' "$*" >&2
	exit 1
}

for tool in go npm python3 timeout; do
	command -v "$tool" >/dev/null 2>&1 || die "'$tool' is required but not on PATH"
done

if [[ -n "${CONFORMANCE_WORKDIR:-}" ]]; then
	WORK="$CONFORMANCE_WORKDIR"
	mkdir -p "$WORK"
else
	WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcpfleet-conformance.XXXXXX")"
fi
BIN="$WORK/bin"
mkdir -p "$BIN"
log "logs and results: $WORK"

# ---------------------------------------------------------------------------
# Process bookkeeping: every process this script starts is recorded and
# stopped on exit.
# ---------------------------------------------------------------------------
PIDS=()

stop_started() {
	local pid
	((${#PIDS[@]})) || return 0
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	local deadline=$((SECONDS + 5))
	for pid in "${PIDS[@]}"; do
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	PIDS=()
}

SUITE_PID=
on_exit() {
	local rc=$?
	if [[ -n "$SUITE_PID" ]]; then
		kill -TERM "$SUITE_PID" 2>/dev/null || true
		wait "$SUITE_PID" 2>/dev/null || true
	fi
	stop_started
	rm -rf "$BIN"
	log "logs and results kept in: $WORK"
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_bg LOGFILE CMD... : start CMD in the background, record its pid in
# STARTED_PID and PIDS.
STARTED_PID=
start_bg() {
	local logfile=$1
	shift
	"$@" >"$logfile" 2>&1 &
	STARTED_PID=$!
	PIDS+=("$STARTED_PID")
}

# free_ports N : print N distinct free loopback TCP ports, one per line.
free_ports() {
	python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
for s in socks:
    s.close()
PY
}

# wait_tcp PORT PID LOGFILE : wait until 127.0.0.1:PORT accepts connections.
wait_tcp() {
	local port=$1 pid=$2 logfile=$3
	local deadline=$((SECONDS + READY_TIMEOUT))
	while ((SECONDS < deadline)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 20 "$logfile" >&2 || true
			die "process $pid exited before listening on port $port (log: $logfile)"
		fi
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	die "127.0.0.1:$port not accepting connections after ${READY_TIMEOUT}s (log: $logfile)"
}

# http_status URL : print the HTTP status of a GET (000 when unreachable).
http_status() {
	if command -v curl >/dev/null 2>&1; then
		curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" 2>/dev/null || true
	else
		python3 - "$1" <<'PY' 2>/dev/null || echo 000
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=2).status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print("000")
PY
	fi
}

# wait_healthz URL PID LOGFILE : wait until URL answers 200.
wait_healthz() {
	local url=$1 pid=$2 logfile=$3 code=000
	local deadline=$((SECONDS + READY_TIMEOUT))
	while ((SECONDS < deadline)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 20 "$logfile" >&2 || true
			die "process $pid exited before $url answered 200 (log: $logfile)"
		fi
		code="$(http_status "$url")"
		[[ "$code" == 200 ]] && return 0
		sleep 0.2
	done
	tail -n 20 "$logfile" >&2 || true
	die "$url did not answer 200 within ${READY_TIMEOUT}s (last status $code, log: $logfile)"
}

# prewarm PORT : call the everything-server's list-mutating tools once, so
# every replica already carries the transient tool and prompt that the
# suite's server-stateless scenario adds to whichever replica it reaches.
# Without this the replicas of a stateless fleet disagree on tools/list for
# the rest of the run and checks that list-then-call go by the balancer's
# luck. Only for stateless servers (a stateful one needs a session first).
prewarm() {
	python3 - "http://127.0.0.1:$1/mcp" <<'PY'
import json, sys, urllib.request
for i, tool in enumerate(["test_trigger_tool_change", "test_trigger_prompt_change"], 1):
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                       "params": {"name": tool, "arguments": {}}}).encode()
    req = urllib.request.Request(sys.argv[1], data=body, method="POST", headers={
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"})
    text = urllib.request.urlopen(req, timeout=10).read().decode()
    if "published" not in text:
        sys.exit(f"prewarm: unexpected answer to {tool}: {text[:200]}")
PY
}

# prewarm_stdio PORT N : the same through a gateway in round-robin over N
# stdio children, as 2026-07-28 requests: N calls of each tool reach each
# child once.
prewarm_stdio() {
	python3 - "http://127.0.0.1:$1/mcp" "$2" <<'PY'
import json, sys, urllib.request
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
for tool in ["test_trigger_tool_change", "test_trigger_prompt_change"]:
    for i in range(int(sys.argv[2])):
        body = json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                           "params": {"name": tool, "arguments": {}, "_meta": meta}}).encode()
        req = urllib.request.Request(sys.argv[1], data=body, method="POST", headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool})
        text = urllib.request.urlopen(req, timeout=10).read().decode()
        if "published" not in text:
            sys.exit(f"prewarm: unexpected answer to {tool}: {text[:200]}")
PY
}

# ---------------------------------------------------------------------------
# Node + conformance suite, cached.
# ---------------------------------------------------------------------------
TOOL_DIR="$CACHE_ROOT/node${NODE_MAJOR}-conformance-${SUITE_VERSION}"
NODE="$TOOL_DIR/node-bin" # symlink to the Node binary the install produced
SUITE_CLI="$TOOL_DIR/node_modules/.bin/conformance"

install_suite() {
	node_tools "$TOOL_DIR" "$NODE_MAJOR" "$WORK/npm-install.log" node_modules/.bin/conformance \
		"@modelcontextprotocol/conformance@${SUITE_VERSION}" ||
		die "could not install Node ${NODE_MAJOR} and @modelcontextprotocol/conformance@${SUITE_VERSION} into $TOOL_DIR (log: $WORK/npm-install.log)"
	log "using Node $("$NODE" --version) + conformance $("$NODE" "$SUITE_CLI" --version) ($TOOL_DIR)"
}

# ---------------------------------------------------------------------------
# Go builds.
# ---------------------------------------------------------------------------

# go_build OUT PKG : build PKG from the repo. If the module's go.sum lacks
# entries (the project requires go-sdk, but go.sum may not list go-sdk's own
# dependencies yet), retry against a scratch copy of go.mod/go.sum via
# -modfile so the project's files are never modified.
go_build() {
	local out=$1 pkg=$2 name
	name="$(basename "$out")"
	if (cd "$REPO" && go build -o "$out" "$pkg") >"$WORK/build-$name.log" 2>&1; then
		return 0
	fi
	if grep -q 'missing go.sum entry\|updates to go.mod needed\|no required module provides' "$WORK/build-$name.log"; then
		log "go build $pkg needs go.sum entries the repo lacks; retrying with a scratch -modfile (repo files untouched)"
		local scratch="$WORK/modfile"
		mkdir -p "$scratch"
		cp "$REPO/go.mod" "$scratch/go.mod"
		[[ -f "$REPO/go.sum" ]] && cp "$REPO/go.sum" "$scratch/go.sum"
		if (cd "$REPO" && go build -modfile="$scratch/go.mod" -mod=mod -o "$out" "$pkg") \
			>>"$WORK/build-$name.log" 2>&1; then
			return 0
		fi
	fi
	return 1
}

build_binaries() {
	log "building everything-server (github.com/modelcontextprotocol/go-sdk/conformance/everything-server)"
	go_build "$BIN/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server || {
		cat "$WORK/build-everything-server.log" >&2
		die "could not build everything-server (log: $WORK/build-everything-server.log)"
	}
	GATEWAY_BIN=
	if [[ -n "${MCPFLEET_BIN:-}" ]]; then
		[[ -x "$MCPFLEET_BIN" ]] || die "MCPFLEET_BIN=$MCPFLEET_BIN is not executable"
		GATEWAY_BIN="$MCPFLEET_BIN"
		log "using gateway binary $GATEWAY_BIN (MCPFLEET_BIN)"
		return 0
	fi
	log "building mcpfleet (./cmd/mcpfleet)"
	if go_build "$BIN/mcpfleet" ./cmd/mcpfleet; then
		GATEWAY_BIN="$BIN/mcpfleet"
	elif [[ "$DIRECT_ONLY" == 1 ]]; then
		log "./cmd/mcpfleet does not build; CONFORMANCE_DIRECT_ONLY=1, so skipping the gateway runs (log: $WORK/build-mcpfleet.log)"
	else
		tail -n 30 "$WORK/build-mcpfleet.log" >&2 || true
		die "could not build ./cmd/mcpfleet (log: $WORK/build-mcpfleet.log); set CONFORMANCE_DIRECT_ONLY=1 to run only the direct part"
	fi
}

# ---------------------------------------------------------------------------
# Suite runs.
# ---------------------------------------------------------------------------

# stateless_for REV : everything-server -stateless value for a requirement set.
# 2025-11-25 exercises sessions (initialize, Mcp-Session-Id, DELETE, GET
# streams), so it needs a stateful server; 2026-07-28 is the stateless
# protocol revision and scores far worse against a stateful server.
stateless_for() {
	local rev=$1 var
	var="CONFORMANCE_STATELESS_${rev//-/}"
	if [[ -n "${!var:-}" ]]; then
		echo "${!var}"
		return
	fi
	case "$rev" in
	2025-*) echo false ;;
	*) echo true ;;
	esac
}

# Results of each run, keyed by "REV|TARGET".
declare -A R_PASSED R_FAILED R_WARN R_RC R_NOTE

# analyse_checks RESULTDIR OUT_TSV : flatten every checks.json under
# RESULTDIR into "scenario<TAB>check-id<TAB>status<TAB>message" lines and
# print "passed failed warnings" (SUCCESS / FAILURE / WARNING counts).
analyse_checks() {
	python3 - "$1" "$2" <<'PY'
import glob, json, os, re, sys
root, out = sys.argv[1], sys.argv[2]
counts = {"SUCCESS": 0, "FAILURE": 0, "WARNING": 0}
rows = []
for path in sorted(glob.glob(os.path.join(root, "**", "checks.json"), recursive=True)):
    scenario = os.path.basename(os.path.dirname(path))
    scenario = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", scenario)
    scenario = re.sub(r"^server-", "", scenario, count=1)
    try:
        checks = json.load(open(path))
    except Exception as e:  # unreadable results count as a failure
        checks = [{"id": "checks.json", "status": "FAILURE", "errorMessage": str(e)}]
    for c in checks:
        st = c.get("status", "")
        if st in counts:
            counts[st] += 1
        msg = str(c.get("errorMessage") or c.get("description") or "").replace("\t", " ").replace("\n", " ")
        rows.append(f"{scenario}\t{c.get('id', '?')}\t{st}\t{msg[:200]}")
with open(out, "w") as f:
    f.write("\n".join(rows) + ("\n" if rows else ""))
print(counts["SUCCESS"], counts["FAILURE"], counts["WARNING"])
PY
}

# run_suite REV TARGET URL : run the suite, record totals.
run_suite() {
	local rev=$1 target=$2 url=$3 key="$1|$2"
	local base="$WORK/$rev-$target"
	local rc=0 t0=$SECONDS
	log "running requirements $rev against $target ($url)"
	# In the background + wait, so that a signal to this script is handled at
	# once (bash defers traps while a foreground child runs).
	timeout -k 10 "$RUN_TIMEOUT" "$NODE" "$SUITE_CLI" server --url "$url" --requirements "$rev" \
		-o "$base.results" >"$base.log" 2>&1 </dev/null &
	SUITE_PID=$!
	wait "$SUITE_PID" || rc=$?
	SUITE_PID=
	local total passed failed warn
	total="$(sed 's/\x1b\[[0-9;]*m//g' "$base.log" | sed -n 's/^Total: \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\1 \2/p' | tail -n 1)"
	read -r _ _ warn < <(analyse_checks "$base.results" "$base.checks.tsv")
	R_WARN[$key]=$warn
	R_RC[$key]=$rc
	if [[ -z "$total" ]]; then
		R_PASSED[$key]=-
		R_FAILED[$key]=-
		if ((rc == 124 || rc == 137)); then
			R_NOTE[$key]="timed out after ${RUN_TIMEOUT}s"
		else
			R_NOTE[$key]="no totals (exit $rc)"
		fi
		log "  $target: ${R_NOTE[$key]}; see $base.log"
		return 0
	fi
	read -r passed failed <<<"$total"
	R_PASSED[$key]=$passed
	R_FAILED[$key]=$failed
	R_NOTE[$key]=
	log "  $target: $passed passed, $failed failed, $warn warnings (suite exit $rc, $((SECONDS - t0))s)"
}

# maybe_prewarm STATELESS PORT
maybe_prewarm() {
	[[ "$1" == true && "$PREWARM" == 1 ]] || return 0
	prewarm "$2" || die "could not prewarm the everything-server on port $2"
}

# run_requirements REV
run_requirements() {
	local rev=$1 stateless
	stateless="$(stateless_for "$rev")"
	log "=== requirements $rev (everything-server -stateless=$stateless)"
	local ports
	mapfile -t ports < <(free_ports $((REPLICAS + 2)))

	# (a) direct: one replica.
	local dport=${ports[0]}
	start_bg "$WORK/$rev-direct.server.log" "$BIN/everything-server" -http "127.0.0.1:$dport" -stateless="$stateless"
	wait_tcp "$dport" "$STARTED_PID" "$WORK/$rev-direct.server.log"
	maybe_prewarm "$stateless" "$dport"
	run_suite "$rev" direct "http://127.0.0.1:$dport/mcp"
	stop_started

	# (b) gateway: REPLICAS replicas behind mcpfleet.
	if [[ -z "$GATEWAY_BIN" ]]; then
		return 0
	fi
	local i uport upstream_args=()
	for ((i = 1; i <= REPLICAS; i++)); do
		uport=${ports[$i]}
		start_bg "$WORK/$rev-gateway.replica$i.log" "$BIN/everything-server" -http "127.0.0.1:$uport" -stateless="$stateless"
		wait_tcp "$uport" "$STARTED_PID" "$WORK/$rev-gateway.replica$i.log"
		maybe_prewarm "$stateless" "$uport"
		upstream_args+=(--upstream "http://127.0.0.1:$uport/mcp")
	done
	local gport=${ports[$((REPLICAS + 1))]}
	start_bg "$WORK/$rev-gateway.mcpfleet.log" "$GATEWAY_BIN" serve --listen "127.0.0.1:$gport" --health-check-interval 0 "${upstream_args[@]}"
	wait_healthz "http://127.0.0.1:$gport/healthz" "$STARTED_PID" "$WORK/$rev-gateway.mcpfleet.log"
	run_suite "$rev" gateway "http://127.0.0.1:$gport/mcp"
	stop_started
	run_stdio "$rev" "$stateless"

	# (c) for comparison: the same replicas behind nginx, round-robin.
	[[ "$NGINX" == 1 ]] || return 0
	mapfile -t ports < <(free_ports $((REPLICAS + 1)))
	local servers=""
	for ((i = 1; i <= REPLICAS; i++)); do
		uport=${ports[$((i - 1))]}
		start_bg "$WORK/$rev-nginx.replica$i.log" "$BIN/everything-server" -http "127.0.0.1:$uport" -stateless="$stateless"
		wait_tcp "$uport" "$STARTED_PID" "$WORK/$rev-nginx.replica$i.log"
		maybe_prewarm "$stateless" "$uport"
		servers+="    server 127.0.0.1:$uport;"$'\n'
	done
	local nport=${ports[$REPLICAS]} ndir="$WORK/$rev-nginx"
	mkdir -p "$ndir/logs"
	# A plain round-robin proxy, configured as sites usually configure one
	# for SSE: HTTP/1.1 upstream keep-alive, buffering off, long read timeouts.
	cat >"$ndir/nginx.conf" <<NGINX
worker_processes 1;
pid $ndir/nginx.pid;
error_log $ndir/logs/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $ndir/body; proxy_temp_path $ndir/proxy;
  fastcgi_temp_path $ndir/fastcgi; uwsgi_temp_path $ndir/uwsgi; scgi_temp_path $ndir/scgi;
  upstream fleet {
$servers    keepalive 32;
  }
  server {
    listen 127.0.0.1:$nport;
    location / {
      proxy_pass http://fleet;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      proxy_buffering off;
      proxy_read_timeout 3600s;
    }
  }
}
NGINX
	start_bg "$ndir/nginx.out" "$NGINX_BIN" -p "$ndir" -c "$ndir/nginx.conf" -g "daemon off;"
	wait_tcp "$nport" "$STARTED_PID" "$ndir/nginx.out"
	run_suite "$rev" nginx "http://127.0.0.1:$nport/mcp"
	stop_started
}

# run_stdio REV STATELESS : the suite through a pooled stdio fleet of REPLICAS
# everything-server children (no -http flag: it speaks stdio). The children
# are stateful servers whatever the requirement set; the gateway serves
# 2026-07-28 on a second process of each, never initialized, that speaks
# it (docs/GATEWAY.md, "stdio servers").
run_stdio() {
	local rev=$1 stateless=$2 sport
	[[ "$STDIO" == 1 && -n "$GATEWAY_BIN" ]] || return 0
	sport="$(free_ports 1)"
	start_bg "$WORK/$rev-stdio.mcpfleet.log" "$GATEWAY_BIN" serve --listen "127.0.0.1:$sport" \
		--health-check-interval 0 --balance round-robin \
		--stdio "'$BIN/everything-server'" --processes "$REPLICAS"
	wait_healthz "http://127.0.0.1:$sport/readyz" "$STARTED_PID" "$WORK/$rev-stdio.mcpfleet.log"
	if [[ "$stateless" == true && "$PREWARM" == 1 ]]; then
		prewarm_stdio "$sport" "$REPLICAS" || die "could not prewarm the stdio children"
	fi
	run_suite "$rev" stdio "http://127.0.0.1:$sport/mcp"
	stop_started
}

# find_nginx sets NGINX_BIN, installing Debian's nginx when it is missing.
find_nginx() {
	NGINX_BIN="$(command -v nginx || true)"
	[[ -z "$NGINX_BIN" && -x /usr/sbin/nginx ]] && NGINX_BIN=/usr/sbin/nginx
	if [[ -z "$NGINX_BIN" ]]; then
		[[ $(id -u) == 0 ]] || die "nginx is missing; install it or unset CONFORMANCE_NGINX"
		log "installing nginx (apt-get)"
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx; } >"$WORK/apt-nginx.log" 2>&1 ||
			die "installing nginx failed; see $WORK/apt-nginx.log"
		NGINX_BIN="$(command -v nginx || echo /usr/sbin/nginx)"
	fi
}

# ---------------------------------------------------------------------------
# Reporting.
# ---------------------------------------------------------------------------

print_table() {
	local rev target key label scored
	printf '\n%-12s  %-22s  %6s  %6s  %8s  %s\n' requirements target passed failed warnings scored
	printf '%-12s  %-22s  %6s  %6s  %8s  %s\n' ------------ ---------------------- ------ ------ -------- ------
	for rev in $REQUIREMENTS; do
		for target in direct gateway stdio nginx; do
			key="$rev|$target"
			case "$target" in
			direct) label="direct (1 replica)" ;;
			gateway) label="gateway ($REPLICAS replicas)" ;;
			stdio)
				[[ "$STDIO" == 1 ]] || continue
				label="stdio ($REPLICAS children)"
				;;
			nginx)
				[[ "$NGINX" == 1 ]] || continue
				label="nginx rr ($REPLICAS replicas)"
				;;
			esac
			if [[ -z "${R_RC[$key]+set}" ]]; then
				[[ "$target" == gateway || "$target" == stdio ]] && printf '%-12s  %-22s  %6s  %6s  %8s  %s\n' "$rev" "$label" - - - skipped
				continue
			fi
			case "${R_RC[$key]}" in
			0) scored=ok ;;
			1) scored=fail ;;
			*) scored="exit ${R_RC[$key]}" ;;
			esac
			[[ -n "${R_NOTE[$key]}" ]] && scored="${R_NOTE[$key]}"
			printf '%-12s  %-22s  %6s  %6s  %8s  %s\n' "$rev" "$label" \
				"${R_PASSED[$key]}" "${R_FAILED[$key]}" "${R_WARN[$key]}" "$scored"
		done
	done
	printf '\n(passed/failed: the suite'"'"'s "Total:" line, all scenarios it ran incl. not-scored ones;\n'
	printf ' scored: ok = every scenario the requirement set scores passed)\n'
}

# diff_checks DIRECT_TSV GATEWAY_TSV : print how the gateway run's checks
# differ from the direct run's, and its failing checks. Exits 1 when the
# gateway run fails a check (or fails it more often) than the direct run.
diff_checks() {
	python3 - "$1" "$2" <<'PY'
import collections, sys

def load(path):
    rows = []
    try:
        for line in open(path):
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3:
                rows.append((parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else ""))
    except FileNotFoundError:
        pass
    return rows

direct, gateway = load(sys.argv[1]), load(sys.argv[2])

def statuses(rows):
    m = collections.defaultdict(list)
    for sc, cid, st, _ in rows:
        if st != "INFO":
            m[f"{sc}/{cid}"].append(st)
    return {k: sorted(v) for k, v in m.items()}

ds, gs = statuses(direct), statuses(gateway)
changed = [(k, ds.get(k, []), gs.get(k, [])) for k in sorted(set(ds) | set(gs)) if ds.get(k, []) != gs.get(k, [])]
if changed:
    print("  Checks whose outcome differs (direct -> gateway):")
    for k, d, g in changed:
        print(f"    {k}: {','.join(d) or '(not run)'} -> {','.join(g) or '(not run)'}")

dfail = collections.Counter(f"{sc}/{cid}" for sc, cid, st, _ in direct if st == "FAILURE")
gfail_rows = [(sc, cid, msg) for sc, cid, st, msg in gateway if st == "FAILURE"]
gfail = collections.Counter(f"{sc}/{cid}" for sc, cid, _ in gfail_rows)
print(f"  Failing checks, gateway run: {sum(gfail.values())}")
shared = collections.defaultdict(list)
seen = set()
for sc, cid, msg in gfail_rows:
    key = f"{sc}/{cid}"
    if key in dfail:
        if cid not in shared[sc]:
            shared[sc].append(cid)
    elif key not in seen:
        seen.add(key)
        print(f"    GATEWAY ONLY  {key}: {msg[:160]}")
for sc, ids in shared.items():
    print(f"    also direct   {sc}: {', '.join(ids)}")
# Worse through the gateway: a check that fails there and not directly.
# One that fails directly and passes through the gateway (the gateway's own
# priming event, say) is an improvement, shown above, not a mismatch.
sys.exit(1 if gfail - dfail else 0)
PY
}

# compare : set MISMATCH=1 when a gateway run differs from its direct run.
MISMATCH=0
compare() {
	local rev d g report rc
	for rev in $REQUIREMENTS; do
		d="$rev|direct"
		g="$rev|gateway"
		[[ -n "${R_RC[$g]+set}" ]] || continue
		rc=0
		report="$(diff_checks "$WORK/$rev-direct.checks.tsv" "$WORK/$rev-gateway.checks.tsv")" || rc=$?
		if [[ -n "${R_NOTE[$d]}" || -n "${R_NOTE[$g]}" ]]; then
			printf '\n%s: a run produced no totals (direct: %s, gateway: %s)\n' "$rev" \
				"${R_NOTE[$d]:-ok}" "${R_NOTE[$g]:-ok}"
		elif ((R_PASSED[$g] < R_PASSED[$d] || R_FAILED[$g] > R_FAILED[$d])); then
			printf '\n%s: the gateway does worse than direct (%s passed, %s failed vs %s passed, %s failed)\n' "$rev" \
				"${R_PASSED[$g]}" "${R_FAILED[$g]}" "${R_PASSED[$d]}" "${R_FAILED[$d]}"
		elif ((rc != 0)); then
			printf '\n%s: same totals, but checks fail through the gateway that pass directly\n' "$rev"
		else
			if [[ "${R_PASSED[$d]} ${R_FAILED[$d]}" != "${R_PASSED[$g]} ${R_FAILED[$g]}" ]]; then
				printf '\n%s: the gateway does better than direct (%s passed, %s failed vs %s passed, %s failed)\n' "$rev" \
					"${R_PASSED[$g]}" "${R_FAILED[$g]}" "${R_PASSED[$d]}" "${R_FAILED[$d]}"
				printf '%s\n' "$report"
			fi
			continue
		fi
		MISMATCH=1
		printf '%s\n' "$report"
		printf '  Suite output: %s   error messages: %s\n' "$WORK/$rev-gateway.log" "$WORK/$rev-gateway.checks.tsv"
	done
}

# compare_stdio : the stdio fleet against the HTTP replicas behind the
# gateway. For a set in STDIO_STRICT, set MISMATCH=1 when a check fails
# through stdio that passes over HTTP, or a run has no totals; for the
# others, report the difference.
compare_stdio() {
	local rev g s report rc strict
	for rev in $REQUIREMENTS; do
		g="$rev|gateway"
		s="$rev|stdio"
		[[ -n "${R_RC[$s]+set}" && -n "${R_RC[$g]+set}" ]] || continue
		strict=0
		if [[ " $STDIO_STRICT " == *" $rev "* ]]; then
			strict=1
		fi
		rc=0
		report="$(diff_checks "$WORK/$rev-gateway.checks.tsv" "$WORK/$rev-stdio.checks.tsv" | sed 's/GATEWAY ONLY/STDIO ONLY  /; s/gateway run/stdio run/; s/(direct -> gateway)/(HTTP -> stdio)/; s/also direct  /also over HTTP/')" || rc=$?
		if [[ -n "${R_NOTE[$s]}" ]]; then
			printf '\n%s: the stdio run produced no totals (%s)\n' "$rev" "${R_NOTE[$s]}"
			rc=1
		elif ((rc == 0)); then
			printf '\n%s: through stdio no check fails that passes over HTTP (%s passed, %s failed vs %s passed, %s failed)\n' "$rev" \
				"${R_PASSED[$s]}" "${R_FAILED[$s]}" "${R_PASSED[$g]}" "${R_FAILED[$g]}"
			continue
		else
			printf '\n%s: checks fail through stdio that pass over HTTP (%s passed, %s failed vs %s passed, %s failed)%s\n' "$rev" \
				"${R_PASSED[$s]}" "${R_FAILED[$s]}" "${R_PASSED[$g]}" "${R_FAILED[$g]}" \
				"$(if ((strict == 0)); then echo '; reported, not scored (CONFORMANCE_STDIO_STRICT)'; fi)"
		fi
		printf '%s\n' "$report"
		if ((strict)); then
			MISMATCH=1
		fi
	done
}

# ---------------------------------------------------------------------------
# Main.
# ---------------------------------------------------------------------------
START=$SECONDS
install_suite
build_binaries
[[ "$NGINX" != 1 ]] || find_nginx
log "suite: conformance $("$NODE" "$SUITE_CLI" --version) on Node $("$NODE" --version)"
for rev in $REQUIREMENTS; do
	run_requirements "$rev"
done

{
	print_table
	compare
	compare_stdio
	if [[ -z "$GATEWAY_BIN" ]]; then
		printf '\nGateway runs skipped (CONFORMANCE_DIRECT_ONLY=1 and ./cmd/mcpfleet does not build).\n'
	elif ((MISMATCH)); then
		printf '\nFAIL: the gateway changed the conformance outcome (or a strict stdio run failed a check).\n'
	else
		printf '\nOK: the gateway did not change the conformance outcome.\n'
	fi
	printf 'Logs: %s (%ss)\n' "$WORK" "$((SECONDS - START))"
} >"$WORK/summary.txt"
cat "$WORK/summary.txt"

# A direct run without totals means the harness itself is broken.
for rev in $REQUIREMENTS; do
	[[ -z "${R_NOTE[$rev|direct]}" ]] || die "direct run for $rev produced no totals: ${R_NOTE[$rev|direct]}"
done
((MISMATCH == 0)) || exit 1
