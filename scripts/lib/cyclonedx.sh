#!/usr/bin/env bash
# Builds cyclonedx-gomod (the CycloneDX project's SBOM generator for Go)
# from the Go module proxy, for scripts/release.sh, and prints the binary's
# path. Like scripts/lib/jaeger.sh it builds as a tool of a scratch module
# (go get -tool), so that mcpfleet's go.mod does not carry it; the version
# is pinned, so the SBOMs a release writes depend on the commit alone. A
# finished build is kept and reused.
#
#   bash scripts/lib/cyclonedx.sh [DIR]    DIR defaults to ~/.cache/mcpfleet/cyclonedx-gomod-VERSION
set -euo pipefail
version=v1.10.0
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpfleet/cyclonedx-gomod-$version}
bin=$dir/cyclonedx-gomod
if [[ -x $bin && -f $dir/.complete ]]; then
	echo "$bin"
	exit 0
fi
mkdir -p "$dir"
scratch=$(mktemp -d "$dir/build.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
start=$SECONDS
echo "cyclonedx.sh: building cyclonedx-gomod $version from the Go module proxy in $scratch" >&2
cd "$scratch"
go mod init cyclonedxbuild >/dev/null 2>&1
go get -tool "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$version" >&2
go build -o "$bin.new.$$" github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod >&2
mv "$bin.new.$$" "$bin" # another build may run beside this one (the suite starts one early)
touch "$dir/.complete"
echo "cyclonedx.sh: built in $((SECONDS - start))s" >&2
echo "$bin"
