#!/usr/bin/env bash
# A cached Node and npm packages in a tool directory of their own, for the
# scripts and tests that run Node tools (scripts/conformance.sh, the
# 2024-11-05 transport's TypeScript test).
#
# Sourced:  . scripts/lib/node.sh
#           node_tools DIR MAJOR LOG CHECK PKG...
# Run:      bash scripts/lib/node.sh DIR MAJOR LOG CHECK PKG...
#           prints DIR/node-bin once it works
#
# DIR gets node_modules with PKG... and Node MAJOR (the "node" npm package,
# or the platform package that holds its binary), and DIR/node-bin, a
# symlink to that binary. CHECK is a path under DIR that must exist when the
# install is complete (a package's bin, say). A DIR that is complete is
# used as it is; otherwise it is installed afresh, npm's output in LOG. The
# install goes to a scratch directory next to DIR first and is moved in
# whole, so that a failed or concurrent one leaves no half DIR behind.

# node_works BIN MAJOR : BIN runs and is Node MAJOR.
node_works() {
	local v
	[[ -x "$1" ]] || return 1
	v="$("$1" --version 2>/dev/null)" || return 1
	[[ "$v" == "v${2}."* ]]
}

# node_tools_ok DIR MAJOR CHECK : DIR is a complete install.
node_tools_ok() {
	local dir=$1 major=$2 check=$3
	[[ -f "$dir/.complete" && -e "$dir/$check" ]] || return 1
	node_works "$dir/node-bin" "$major"
}

# node_tools DIR MAJOR LOG CHECK PKG... : see above. Messages go to stderr.
node_tools() {
	local dir=$1 major=$2 npmlog=$3 check=$4
	shift 4
	if node_tools_ok "$dir" "$major" "$check"; then
		return 0
	fi
	printf '[node] installing Node %s and %s into %s\n' "$major" "$*" "$dir" >&2
	mkdir -p "$(dirname "$dir")"
	rm -rf "$dir"
	local tmp
	tmp="$(mktemp -d "$(dirname "$dir")/.install.XXXXXX")"
	printf '{"name":"mcpfleet-node-tools","private":true}\n' >"$tmp/package.json"
	# The "node" package fetches its platform's Node binary package in an
	# install script, so scripts must be allowed for this install.
	if ! (cd "$tmp" && timeout 600 npm install --no-audit --no-fund --ignore-scripts=false \
		--loglevel=error "node@${major}" "$@") >"$npmlog" 2>&1; then
		tail -n 30 "$npmlog" >&2 || true
		rm -rf "$tmp"
		printf '[node] npm install failed (log: %s)\n' "$npmlog" >&2
		return 1
	fi
	if node_works "$tmp/node_modules/.bin/node" "$major"; then
		ln -s node_modules/.bin/node "$tmp/node-bin"
	else
		# The install script did not run (npm refusing install scripts):
		# install the platform package that holds the binary directly.
		local arch
		case "$(uname -m)" in
		x86_64 | amd64) arch=x64 ;;
		aarch64 | arm64) arch=arm64 ;;
		*) arch="$(uname -m)" ;;
		esac
		printf '[node] node@%s gave no working binary; installing node-linux-%s@%s\n' "$major" "$arch" "$major" >&2
		(cd "$tmp" && timeout 600 npm install --no-audit --no-fund --loglevel=error \
			"node-linux-${arch}@${major}") >>"$npmlog" 2>&1 || true
		if node_works "$tmp/node_modules/node-linux-${arch}/bin/node" "$major"; then
			ln -s "node_modules/node-linux-${arch}/bin/node" "$tmp/node-bin"
		fi
	fi
	touch "$tmp/.complete"
	if ! node_tools_ok "$tmp" "$major" "$check"; then
		rm -rf "$tmp"
		printf '[node] npm install gave no working Node %s or no %s (log: %s)\n' "$major" "$check" "$npmlog" >&2
		return 1
	fi
	# -T: if another run installed it meanwhile, keep that one.
	mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
	node_tools_ok "$dir" "$major" "$check"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	set -euo pipefail
	(($# >= 5)) || {
		echo "usage: $0 DIR MAJOR LOG CHECK PKG..." >&2
		exit 2
	}
	node_tools "$@"
	printf '%s\n' "$1/node-bin"
fi
