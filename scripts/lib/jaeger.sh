#!/usr/bin/env bash
# Builds Jaeger's all-in-one (v2, an OpenTelemetry Collector with Jaeger's
# storage and query) from the Go module proxy, for the tracing test, and
# prints the binary's path. Its go.mod has replace directives, so it builds
# as a tool of a scratch module (go get -tool), not with go install. A
# finished build is kept and reused.
#
#   bash scripts/lib/jaeger.sh [DIR]    DIR defaults to ~/.cache/mcpfleet/jaeger-VERSION
set -euo pipefail
version=v1.75.0
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpfleet/jaeger-$version}
bin=$dir/jaeger
if [[ -x $bin && -f $dir/.complete ]]; then
	echo "$bin"
	exit 0
fi
mkdir -p "$dir"
scratch=$(mktemp -d "$dir/build.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
start=$SECONDS
echo "jaeger.sh: building Jaeger $version from the Go module proxy in $scratch" >&2
cd "$scratch"
go mod init jaegerbuild >/dev/null 2>&1
go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$version" >&2
go build -o "$bin.new" github.com/jaegertracing/jaeger/cmd/jaeger >&2
mv "$bin.new" "$bin"
touch "$dir/.complete"
echo "jaeger.sh: built in $((SECONDS - start))s" >&2
echo "$bin"
