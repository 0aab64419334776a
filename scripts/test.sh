#!/usr/bin/env bash
# The test command: on a fresh machine it installs what the tests need, then
# runs vet, staticcheck, the race-enabled test suite, the container image's
# and the Helm chart's checks and the alert rules' (deploy/), short fuzz runs of
# every parser of untrusted bytes, the benchmarks once, and the official MCP
# conformance suite through the gateway (scripts/conformance.sh).
#
#   bash scripts/test.sh            everything
#   SKIP_CONFORMANCE=1 bash scripts/test.sh
#   FUZZTIME=60s bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

# run NAME CMD...: one step of the suite. A step that fails is named and the
# suite goes on with the next one (the steps are independent), so one
# failure does not hide the state of the rest; the last line names every
# step that failed, and the exit status is non-zero if any did.
failed=()
run() {
	local name=$1 status start=$SECONDS
	shift
	step "$name"
	set +e
	(set -e; "$@")
	status=$?
	set -e
	if ((status)); then
		failed+=("$name")
		printf '== FAILED (exit %d) after %ds: %s\n' "$status" $((SECONDS - start)) "$name"
	else
		printf '== %ds: %s\n' $((SECONDS - start)) "$name"
	fi
}

if ! command -v go >/dev/null; then
	echo "scripts/test.sh: Go 1.26 is required (https://go.dev/dl/)" >&2
	exit 1
fi

# Real nginx and HAProxy (Debian's packages) for the tests that run them in
# front of a fleet, a real redis-server for the shared-store tests (each
# test starts its own on a free loopback port), and Chromium for the lab's
# browser test. Installed when missing, without starting their services.
install_balancers() {
	local missing=()
	command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
	command -v haproxy >/dev/null || [[ -x /usr/sbin/haproxy ]] || missing+=(haproxy)
	command -v redis-server >/dev/null || missing+=(redis-server)
	command -v redis-cli >/dev/null || missing+=(redis-tools) # redis-cli --cluster create, for the Redis Cluster tests
	command -v chromium >/dev/null || [[ -x /usr/bin/chromium ]] || missing+=(chromium)
	[[ -s /etc/ssl/certs/ca-certificates.crt ]] || missing+=(ca-certificates) # the container image's CA bundle
	command -v git >/dev/null || missing+=(git)                                 # the image's build time and version
	command -v promtool >/dev/null || missing+=(prometheus)                     # promtool, for the alert rules
	((${#missing[@]})) || return 0
	if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
		echo "scripts/test.sh: ${missing[*]} missing and cannot be installed here; their tests will be skipped" >&2
		return 0
	fi
	step "installing ${missing[*]} (apt-get)"
	local guard=""
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then # keep the packages from starting their services
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		guard=1
	fi
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	[[ -z "$guard" ]] || rm -f /usr/sbin/policy-rc.d
}
install_balancers
if { command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]]; } && { command -v haproxy >/dev/null || [[ -x /usr/sbin/haproxy ]]; }; then
	export MCPFLEET_REQUIRE_BALANCERS=1 # from here on, a missing balancer fails its tests
fi
if command -v redis-server >/dev/null; then
	export MCPFLEET_REQUIRE_REDIS=1
fi
if command -v npm >/dev/null; then
	export MCPFLEET_REQUIRE_NODE=1 # the TypeScript SDK and everything server tests (scripts/lib/node.sh installs Node 22)
fi
if command -v chromium >/dev/null || [[ -x /usr/bin/chromium ]]; then
	export MCPFLEET_REQUIRE_CHROMIUM=1 # the lab's browser test
fi
if command -v promtool >/dev/null; then
	export MCPFLEET_REQUIRE_PROMTOOL=1 # the alert rules' checks
fi

# Jaeger for the tracing test: built from the Go module proxy (about ten
# minutes on a fresh machine, most of it downloads), in the background
# while the first steps run, at the lowest priority so that it takes only
# the cores the tests leave idle (they measure time); its step below waits
# for it.
jaeger_out=$(mktemp -d)
(
	nice -n 19 bash scripts/lib/jaeger.sh >"$jaeger_out/path" 2>"$jaeger_out/log"
	echo $? >"$jaeger_out/status.new" && mv "$jaeger_out/status.new" "$jaeger_out/status"
) &

# The deployment artefacts are nested modules, so that the binary's own
# module gains neither go-containerregistry nor Helm and the Kubernetes API.
deploy_image() {
	cd deploy/image
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	go test -count=1 -timeout 40m ./... # at the lowest priority beside the foreground steps: slow, not stuck
}

# Its module replaces this one (it checks the chart with serve's own
# configuration code), so a change of the root go.mod needs a tidy here too.
deploy_helm() {
	cd deploy/helm
	if ! go mod tidy -diff >/dev/null; then
		echo "deploy/helm/go.mod is out of date with the root module's: run (cd deploy/helm && go mod tidy)" >&2
		return 1
	fi
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	go test -count=1 -timeout 40m ./... # at the lowest priority beside the foreground steps: slow, not stuck
}

# Every Fuzz function in the tree, each run on its own for a short while.
# fuzz_one PKG FN: a failure counts when it wrote a failing input, or when it
# is anything but Go 1.26's coordinator race at the end of -fuzztime
# ("context deadline exceeded" with no input written: golang/go#75804, fixed
# in Go 1.27), after which the corpus is replayed and must pass.
fuzz_one() {
	local pkg=$1 fn=$2 dir="$1/testdata/fuzz/$2" before after out status
	before=$(ls "$dir" 2>/dev/null || true)
	# A bounded minimisation: without it a new input can keep the fuzzer
	# minimising for the whole run instead of fuzzing.
	set +e
	out=$(go test -run '^$' -fuzz "^${fn}\$" -fuzztime "${FUZZTIME:-4s}" -fuzzminimizetime 500x "$pkg" 2>&1)
	status=$?
	set -e
	echo "$out"
	[[ $status == 0 ]] && return 0
	after=$(ls "$dir" 2>/dev/null || true)
	if [[ $before == "$after" ]] && grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input' <<<"$out"; then
		echo "-- $fn: the fuzz coordinator's deadline race (golang/go#75804), no failing input; replaying the corpus"
		go test -count=1 -run "^${fn}\$" "$pkg"
		return
	fi
	return 1
}
# fuzz_all runs every target, even past one that fails, and names those
# that failed.
fuzz_all() {
	local file pkg fn bad=()
	for file in $(grep -rl --include='*_test.go' '^func Fuzz' internal); do
		pkg="./$(dirname "$file")"
		for fn in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
			echo "-- $pkg $fn"
			fuzz_one "$pkg" "$fn" || bad+=("$pkg $fn")
		done
	done
	if ((${#bad[@]})); then
		printf -- '-- fuzz target failed: %s\n' "${bad[@]}" >&2
		return 1
	fi
}
# background FN...: runs the steps FN one after another in the background,
# at the lowest priority, from now on, so that their downloads and compiles
# take only the cores the foreground steps leave idle; await_step FN shows
# one's output and status as a step of its own. vet, staticcheck and the
# deployment checks (which compile Helm, the Kubernetes API and
# go-containerregistry) take minutes on a fresh machine and measure no
# time, and neither does fuzzing (each target runs for a stated time, on
# whatever CPU it gets), so they run beside the race-enabled tests, whose
# processes wait on the network and on timers for much of theirs.
bg_out=$(mktemp -d)
background() {
	local fn
	for fn in "$@"; do
		local status=0
		nice -n 19 bash -c "set -euo pipefail; $(declare -f); $fn" >"$bg_out/$fn.log" 2>&1 || status=$?
		echo $status >"$bg_out/$fn.status.new" && mv "$bg_out/$fn.status.new" "$bg_out/$fn.status"
	done
}
await_step() {
	local fn=$1 waited=0
	while [[ ! -f $bg_out/$fn.status ]] && ((waited < 3600)); do
		sleep 2
		waited=$((waited + 2))
	done
	cat "$bg_out/$fn.log"
	[[ $(cat "$bg_out/$fn.status" 2>/dev/null) == 0 ]]
}
go_vet() { go vet ./...; }
staticcheck_root() { go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...; }
background go_vet staticcheck_root deploy_image deploy_helm fuzz_all &

# cyclonedx-gomod for the release step's SBOMs, the same way (kept after
# the first build; the release step builds it itself if this has not
# finished).
(nice -n 19 bash scripts/lib/cyclonedx.sh >/dev/null 2>&1 &)

# The load runs measure rolling restarts and CPU shares on wall-clock time:
# they run on their own below, not beside the other packages on two cores.
# The fault matrix times its calls against health-check intervals: it
# runs on its own below.
run "go test -race" go test -race -count=1 -timeout 15m -skip '^TestFaultMatrix$' $(go list ./... | grep -v -e /internal/load -e /internal/sim$)

# A simulator run is one goroutine by construction (its determinism tests
# hold a run to the same bytes every time), and the race detector would
# only make it four times slower; what runs runs in parallel (sweep.go) is
# raced on its own.
sim_tests() {
	go test -count=1 ./internal/sim
	go test -race -count=1 -run '^TestParallel' ./internal/sim
}
run "go test: the simulator (its parallel runner with -race)" sim_tests

MCPFLEET_TEST_SERVER=std run "go test -race: the gateway behind net/http's server (server: std)" go test -race -count=1 ./internal/gateway

# The checks started in the background above; the load runs below measure
# CPU shares, so they wait for them to end.
run "go vet" await_step go_vet
run "staticcheck" await_step staticcheck_root
run "deploy/image: the container image, built offline and inspected" await_step deploy_image
run "deploy/helm: the Helm chart, rendered and decoded strictly" await_step deploy_helm
run "fuzz (${FUZZTIME:-4s} per target, in the background)" await_step fuzz_all

# It measures CPU shares and throughput on wall-clock time: alone, and
# without the race detector's tenfold cost.
run "load: real fleets against the model, the chaos preset's rolling restarts, the bottleneck finder (internal/load, alone)" \
	go test -count=1 -timeout 8m ./internal/load

# What 200 clients that stop reading cost a real gateway process: without
# the race detector, whose process is not the one a user runs.
run "slow readers: a gateway process's memory under 200 non-reading clients, over HTTP/1.1 and HTTP/2 (cmd/mcpfleet, without -race)" \
	go test -count=1 -run '^TestSlowReadersMemory(H2)?$' -v ./cmd/mcpfleet

# Toxiproxy between a gateway process, its replica and Redis: every fault
# x era x call ends in the right answer or a JSON-RPC error within its
# bound, no mutation runs twice or is lost. -v prints the table, and the
# processes' JSON log lines, which are left out here.
fault_matrix() {
	go test -count=1 -timeout 5m -run '^TestFaultMatrix$' -v ./cmd/mcpfleet 2>&1 | grep -v '^{"time"'
}
run "fault matrix: Toxiproxy between a gateway process, its replica and Redis (cmd/mcpfleet, without -race)" fault_matrix

# A real Jaeger takes the spans of a call through a gateway process and a
# testserver replica, and its query API must show them as one trace.
tracing_jaeger() {
	# A step runs in a subshell, which cannot wait for the build: its
	# status file says when it is done (bounded: 30 minutes).
	local waited=0
	while [[ ! -f $jaeger_out/status ]] && ((waited < 1800)); do
		sleep 2
		waited=$((waited + 2))
	done
	if [[ $(cat "$jaeger_out/status" 2>/dev/null) != 0 ]]; then
		echo "building Jaeger failed or did not finish in 30 minutes:" >&2
		tail -30 "$jaeger_out/log" >&2
		return 1
	fi
	tail -1 "$jaeger_out/log"
	MCPFLEET_JAEGER=$(cat "$jaeger_out/path") MCPFLEET_REQUIRE_JAEGER=1 \
		go test -count=1 -run '^TestTracesInJaeger$' -v ./cmd/mcpfleet
}
run "tracing: a real Jaeger (built from the Go module proxy) shows client, gateway, attempt and replica in one trace" tracing_jaeger

# The alert rules (deploy/prometheus), checked and unit-tested by promtool
# (Debian's prometheus package). Without it the step is skipped, unless CI
# is true or it was installed above: then it fails.
prometheus_rules() {
	if ! command -v promtool >/dev/null; then
		if [[ "${CI:-}" == true || "${MCPFLEET_REQUIRE_PROMTOOL:-}" == 1 ]]; then
			echo "promtool not installed (Debian package prometheus)" >&2
			return 1
		fi
		echo "promtool not installed (Debian package prometheus): skipped; CI=true fails instead"
		return 0
	fi
	cd deploy/prometheus
	promtool check rules alerts.yaml
	promtool test rules alerts_test.yaml
}
run "deploy/prometheus: the alert rules, checked and unit-tested by promtool" prometheus_rules

run "release: scripts/release.sh twice from a clean clone (linux/amd64, SBOM, image, chart) gives the same SHA256SUMS" bash scripts/lib/release-check.sh


run "benchmarks (once each)" go test -run '^$' -bench . -benchtime 1x ./...

if [[ "${SKIP_CONFORMANCE:-}" == 1 ]]; then
	step "conformance: skipped (SKIP_CONFORMANCE=1)"
else
	run "MCP conformance suite, direct and through the gateway" bash scripts/conformance.sh
fi

if ((${#failed[@]})); then
	printf '\nscripts/test.sh: %d step(s) failed: %s\n' "${#failed[@]}" "$(IFS=';'; echo "${failed[*]}" | sed 's/;/; /g')"
	exit 1
fi
printf '\nscripts/test.sh: every step passed\n'
