#!/usr/bin/env bash
# The release is reproducible (docs/RELEASING.md): from a clean clone of
# HEAD, scripts/release.sh run twice gives the same SHA256SUMS. To stay
# cheap in the suite it builds one platform (RELEASE_PLATFORMS, default
# linux/amd64) with its SBOM, the image and the chart; the five platforms'
# comparison is run by hand (RELEASE_PLATFORMS="linux/amd64 linux/arm64
# darwin/amd64 darwin/arm64"). It also checks what is in the
# output: the archive's binary says the version and the commit, the SBOM
# lists every module of the binary's build info, the image layout is tagged
# with the version, the chart is there.
#
#   bash scripts/lib/release-check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export RELEASE_PLATFORMS=${RELEASE_PLATFORMS:-linux/amd64}
version=0.0.0-check.1
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() {
	echo "release-check: $*" >&2
	exit 1
}

git clone -q . "$tmp/src"
commit=$(git -C "$tmp/src" rev-parse HEAD)
for run in a b; do
	start=$SECONDS
	bash "$tmp/src/scripts/release.sh" "$version" "$tmp/$run"
	echo "release-check: build $run took $((SECONDS - start))s"
done
diff "$tmp/a/SHA256SUMS" "$tmp/b/SHA256SUMS" || fail "two builds of $commit differ (above)"
echo "release-check: two builds of $commit have the same SHA256SUMS ($(wc -l <"$tmp/a/SHA256SUMS") files)"
(cd "$tmp/a" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match the files"

for platform in $RELEASE_PLATFORMS; do
	name=mcpfleet-$version-${platform%/*}-${platform#*/}
	[[ -f $tmp/a/$name.tar.gz && -f $tmp/a/$name.cdx.json ]] || fail "no $name.tar.gz or $name.cdx.json"
	grep -q "^[0-9a-f]\{64\}  $name.tar.gz$" "$tmp/a/SHA256SUMS" || fail "SHA256SUMS lacks $name.tar.gz"
	mkdir -p "$tmp/x"
	tar -xzf "$tmp/a/$name.tar.gz" -C "$tmp/x"
	bin=$tmp/x/$name/mcpfleet
	[[ ${platform%/*} == windows ]] && bin=$bin.exe
	for f in LICENSE NOTICE README.md; do
		[[ -f $tmp/x/$name/$f ]] || fail "$name.tar.gz lacks $f"
	done
	# The SBOM's modules are the binary's build info's, no more, no less.
	go version -m "$bin" | awk '$1 == "dep" || $1 == "=>" { print $2 "@" $3 }' | LC_ALL=C sort -u >"$tmp/buildinfo"
	grep -o '"purl": "pkg:golang/[^"?]*' "$tmp/a/$name.cdx.json" | sed 's|.*pkg:golang/||' |
		grep -v "^github.com/mcpfleet/mcpfleet@" | LC_ALL=C sort -u >"$tmp/sbom"
	[[ $(wc -l <"$tmp/buildinfo") -gt 10 ]] || fail "$name: the build info lists $(wc -l <"$tmp/buildinfo") modules"
	diff "$tmp/buildinfo" "$tmp/sbom" || fail "$name.cdx.json does not list the modules of the binary's build info (above: < build info, > SBOM)"
	grep -q "\"timestamp\": \"$(date -u -d "@$(git -C "$tmp/src" log -1 --format=%ct)" +%Y-%m-%dT%H:%M:%SZ)\"" "$tmp/a/$name.cdx.json" ||
		fail "$name.cdx.json's timestamp is not the commit's"
	if [[ $platform == linux/amd64 ]]; then
		out=$("$bin" version)
		grep -qx "mcpfleet $version" <<<"$out" && grep -qx "commit: *$commit" <<<"$out" ||
			fail "the linux/amd64 binary's version says:"$'\n'"$out"$'\n'"want $version and $commit"
		echo "release-check: the linux/amd64 binary says:"
		echo "$out"
	fi
	echo "release-check: $name: archive, binary and SBOM ($(wc -l <"$tmp/sbom") modules) checked"
done

grep -q "\"org.opencontainers.image.ref.name\": *\"$version\"" "$tmp/a/mcpfleet-$version-image/index.json" ||
	fail "the image layout is not tagged $version: $(cat "$tmp/a/mcpfleet-$version-image/index.json")"
tar -xzOf "$tmp/a/mcpfleet-$version.tgz" mcpfleet/Chart.yaml | grep -qx "appVersion: $version" ||
	fail "mcpfleet-$version.tgz's appVersion is not $version"
echo "release-check: the image layout is tagged $version; the chart is mcpfleet-$version.tgz"
