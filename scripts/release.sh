#!/usr/bin/env bash
# Builds a release of the commit checked out, offline (Go and the module
# cache; cyclonedx-gomod from the Go module proxy on first use, then kept),
# and byte for byte the same every time: docs/RELEASING.md.
#
#   bash scripts/release.sh VERSION [OUTDIR]      OUTDIR defaults to dist/VERSION
#   RELEASE_PLATFORMS="linux/amd64" bash scripts/release.sh 0.2.0 OUT
#
# OUTDIR gets, for each platform, mcpfleet-VERSION-OS-ARCH.tar.gz (the
# binary, LICENSE, NOTICE, README.md, CHANGELOG.md) and its CycloneDX SBOM
# mcpfleet-VERSION-OS-ARCH.cdx.json; the container image as an OCI layout
# tagged VERSION (mcpfleet-VERSION-image/); the Helm chart
# mcpfleet-VERSION.tgz; and SHA256SUMS over all of them. Every time in them
# is the commit's (SOURCE_DATE_EPOCH), never the clock's.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "release.sh: $*" >&2
	exit 2
}

(($# == 1 || $# == 2)) || die "usage: bash scripts/release.sh VERSION [OUTDIR], e.g. bash scripts/release.sh 0.2.0"
version=$1
# Semantic Versioning 2.0.0 without build metadata, and without the "v"
# the git tag has: it names archives, the chart and the image tag.
semver='^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
if [[ $version == v* && ${version#v} =~ $semver ]]; then
	die "VERSION $version: give it without the v (${version#v}); the tag is v${version#v}"
fi
[[ $version =~ $semver ]] || die "VERSION '$version' is not a semantic version such as 0.2.0 or 1.0.0-rc.1"
out=${2:-dist/$version}

command -v git >/dev/null || die "git is needed: the release is of a commit"
git rev-parse --verify -q HEAD >/dev/null || die "not in a git checkout with a commit"
# The build reads the commit alone (a clone of it, below), so untracked
# files cannot change it; changes to tracked files would not be in it, and
# the archives would not be what the tree shows: refuse them.
if [[ -n $(git status --porcelain --untracked-files=no) ]]; then
	git status --short --untracked-files=no >&2
	die "the work tree has changes that are not committed: commit or stash them; a release is built from a commit"
fi
if [[ -e $out && -n $(ls -A "$out") ]]; then
	die "OUTDIR $out is not empty: give a new or empty directory"
fi

# Not windows: the code does not build there (the secret file's checks read
# Unix owners and modes); docs/RELEASING.md says so.
platforms=${RELEASE_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
commit=$(git rev-parse HEAD)
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct HEAD)
export SOURCE_DATE_EPOCH
commit_time=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
start=$SECONDS

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
# A clone of the commit alone: what is built is what was committed.
git clone -q --no-checkout --shared . "$work/src"
git -C "$work/src" -c advice.detachedHead=false checkout -q "$commit"
src=$work/src

cdx=$(bash scripts/lib/cyclonedx.sh)

# The same -X flags, in the same order, as deploy/image gives the image's
# binary (its stamps), so that the linux archives and the image carry alike
# binaries.
vpkg=github.com/mcpfleet/mcpfleet/internal/version
ldflags="-s -w -X $vpkg.version=$version -X $vpkg.commit=$commit -X $vpkg.commitTime=$commit_time"

# tgz DIR NAME: DIR/NAME as a deterministic .tar.gz on stdout: names
# sorted, one time, owner 0:0 without names, no gzip name or time.
tgz() {
	tar -C "$1" --sort=name --format=ustar --mtime="@$SOURCE_DATE_EPOCH" \
		--owner=0 --group=0 --numeric-owner -cf - "$2" | gzip -n -9
}

for platform in $platforms; do
	goos=${platform%/*} goarch=${platform#*/}
	name=mcpfleet-$version-$goos-$goarch
	exe=mcpfleet
	[[ $goos == windows ]] && exe=mcpfleet.exe
	stage=$work/stage/$name
	mkdir -p "$stage"
	echo "release.sh: $platform" >&2
	(cd "$src" && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch GOFLAGS=-buildvcs=false GOWORK=off \
		go build -trimpath -ldflags="$ldflags" -o "$stage/$exe" ./cmd/mcpfleet)
	cp "$src/LICENSE" "$src/NOTICE" "$src/README.md" "$src/CHANGELOG.md" "$stage/"
	chmod 0755 "$stage" "$stage/$exe"
	chmod 0644 "$stage"/{LICENSE,NOTICE,README.md,CHANGELOG.md}
	tgz "$work/stage" "$name" >"$out/$name.tar.gz"
	# The SBOM lists every module of the binary's build info (go version
	# -m). cyclonedx-gomod stamps the clock, so it writes none, and the
	# commit's time goes in as metadata.timestamp; no random serial number.
	"$cdx" bin -json -noserial -notimestamp -version "v$version" -output "$work/$name.cdx.json" "$stage/$exe"
	sed "0,/\"metadata\": {/s//\"metadata\": {\n    \"timestamp\": \"$commit_time\",/" "$work/$name.cdx.json" >"$out/$name.cdx.json"
done

echo "release.sh: the container image (linux/amd64)" >&2
(cd "$src/deploy/image" && GOWORK=off go run . --version "$version" --out "$out/mcpfleet-$version-image" >&2)

echo "release.sh: the Helm chart" >&2
(cd "$src/deploy/helm" && GOWORK=off go run ./pack --version "$version" --out "$out" >/dev/null)

# SHA256SUMS: every file, the image layout's included, sorted by name.
(cd "$out" && find . -type f ! -name SHA256SUMS | LC_ALL=C sort | sed 's|^\./||' | xargs sha256sum >SHA256SUMS)
echo "release.sh: mcpfleet $version ($commit) in $out, $((SECONDS - start))s" >&2
