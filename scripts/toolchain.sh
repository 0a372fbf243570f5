#!/usr/bin/env bash
# Makes sure the Go toolchain go.mod names is there.
#
#   scripts/toolchain.sh           if no go on PATH is at least go.mod's go
#                                  version, fetch the toolchain go.mod names
#                                  into .toolchain/goVERSION (quiet when all is
#                                  there)
#   scripts/toolchain.sh --check   exit 0 if nothing needs fetching
#   scripts/toolchain.sh --bindir  print .toolchain/goVERSION/bin (the Makefile
#                                  puts it first on PATH; it may not exist)
#
# The toolchain comes from the Go module proxy ($GOPROXY, default
# https://proxy.golang.org) as the module golang.org/toolchain, version
# v0.0.1-goVERSION.linux-ARCH: the same zip the go command itself downloads
# for GOTOOLCHAIN=auto. It needs no Go to fetch (Debian 12's golang-go is Go
# 1.19, which can neither read `go 1.26.8` in go.mod nor switch toolchains),
# only curl, unzip and sha256sum/base64 (coreutils).
#
# Verification: the unpacked files are hashed the way go.sum hashes a module
# zip (dirhash "h1:": SHA-256 of the sorted "sha256  name" lines) and compared
# with the go.sum line below for that version (those were checked by
# `go mod download`, which verifies the signed checksum database). For a
# version not listed here the expected hash is looked up in the checksum
# database ($GOSUMDB, default sum.golang.org, through the proxy first, as the
# go command does) over HTTPS, without checking the database's signature.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# go.sum lines of the toolchains go.mod has named; add the lines for a new
# version (from `go mod download -json golang.org/toolchain@v0.0.1-goV.linux-ARCH`).
known_sums='
golang.org/toolchain v0.0.1-go1.26.8.linux-amd64 h1:ZOmGe1OnfREDMIdb1Qi4G9JSuDPBLGExZMQ4nis1RXM=
golang.org/toolchain v0.0.1-go1.26.8.linux-arm64 h1:sYL/O6MqS68ML0kjsQ36WoYIpJqkw60TxizWUYUKQMc=
'

die() { echo "toolchain: $*" >&2; exit 1; }

# The minimum (go line) and the toolchain to fetch (toolchain line, else go line).
min=$(sed -n 's/^go[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "$root/go.mod" | head -1)
want=$(sed -n 's/^toolchain[[:space:]]\{1,\}go\([^[:space:]]*\).*/\1/p' "$root/go.mod" | head -1)
[ -n "$min" ] || die "no go line in $root/go.mod"
want=${want:-$min}
dir="$root/.toolchain/go$want"

if [ "${1:-}" = --bindir ]; then
	echo "$dir/bin"
	exit 0
fi

# vercmp A B: true if Go version A >= B (1.26.8, 1.26rc1 < 1.26.0, 1.26 = 1.26.0).
vercmp() {
	local a b
	a=$(normver "$1") b=$(normver "$2")
	[ "$(printf '%s\n%s\n' "$a" "$b" | sort -t. -k1,1n -k2,2n -k3,3n -k4,4n | tail -1)" = "$a" ]
}
normver() { # 1.26.8 -> 1.26.8.9999, 1.26rc2 -> 1.26.0.2, 1.26beta1 -> 1.26.0.1
	local v=$1 pre=9999 maj min pat
	case $v in
	*rc*) pre=$((1000 + ${v##*rc})) v=${v%%rc*} ;;
	*beta*) pre=${v##*beta} v=${v%%beta*} ;;
	esac
	IFS=. read -r maj min pat <<<"$v"
	echo "${maj:-0}.${min:-0}.${pat:-0}.$pre"
}

# suitable GO: true if the go binary GO (a path or a command) is at least $min.
suitable() {
	local v
	v=$(cd / && GOTOOLCHAIN=local "$1" version 2>/dev/null | awk '{print $3}') || return 1
	case $v in
	go[0-9]*) vercmp "${v#go}" "$min" ;;
	devel*) return 0 ;; # a source build: the user's choice
	*) return 1 ;;
	esac
}

if [ -x "$dir/bin/go" ] && suitable "$dir/bin/go"; then
	exit 0
fi
if command -v go >/dev/null 2>&1 && suitable go; then
	exit 0
fi
[ "${1:-}" = --check ] && exit 1
[ $# -eq 0 ] || die "unknown argument $1"

case $(uname -s) in
Linux) goos=linux ;;
*) die "only Linux is handled here; install Go $want from https://go.dev/dl" ;;
esac
case $(uname -m) in
x86_64 | amd64) goarch=amd64 ;;
aarch64 | arm64) goarch=arm64 ;;
*) die "unhandled architecture $(uname -m); install Go $want from https://go.dev/dl" ;;
esac
for t in curl unzip sha256sum base64; do
	command -v $t >/dev/null 2>&1 || die "needs $t (scripts/setup.sh installs it)"
done

mod=golang.org/toolchain
ver=v0.0.1-go$want.$goos-$goarch
mkdir -p "$root/.toolchain"
tmp=$(mktemp -d "$root/.toolchain/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Proxies in $GOPROXY order (',' or '|' separated; "direct" cannot serve
# golang.org/toolchain without a go command, "off" ends the list).
proxies=()
IFS=',|' read -r -a list <<<"${GOPROXY:-https://proxy.golang.org,direct}"
for p in "${list[@]}"; do
	case $p in
	off) break ;;
	direct | '') ;;
	*) proxies+=("${p%/}") ;;
	esac
done
[ ${#proxies[@]} -gt 0 ] || die "GOPROXY=${GOPROXY:-} names no proxy to fetch $mod@$ver from"

got=
for p in "${proxies[@]}"; do
	echo "setup: fetching Go $want ($mod@$ver) from $p"
	if curl -fsSL --netrc-optional --retry 3 -o "$tmp/go.zip" "$p/$mod/@v/$ver.zip"; then
		got=$p
		break
	fi
done
[ -n "$got" ] || die "could not download $mod@$ver from ${proxies[*]}"

# The expected go.sum hash: the line above, else the checksum database.
want_sum=$(awk -v m="$mod" -v v="$ver" '$1 == m && $2 == v {print $3}' <<<"$known_sums")
if [ -z "$want_sum" ]; then
	sumdb=${GOSUMDB:-sum.golang.org}
	if [ "$sumdb" = off ]; then
		echo "toolchain: GOSUMDB=off: $mod@$ver is NOT verified" >&2
	else
		name=${sumdb%% *} name=${name%%+*}
		urls=()
		for p in "${proxies[@]}"; do urls+=("$p/sumdb/$name"); done
		case $sumdb in
		*' '*) urls+=("${sumdb#* }") ;;
		*) urls+=("https://$name") ;;
		esac
		for u in "${urls[@]}"; do
			want_sum=$(curl -fsSL --netrc-optional --retry 2 "${u%/}/lookup/$mod@$ver" 2>/dev/null |
				awk -v m="$mod" -v v="$ver" '$1 == m && $2 == v {print $3; exit}') || true
			[ -z "$want_sum" ] || break
		done
		[ -n "$want_sum" ] || die "could not look up $mod@$ver in the checksum database $name (GOSUMDB=off skips the check)"
	fi
fi

unzip -q "$tmp/go.zip" -d "$tmp/x"
rm "$tmp/go.zip"
top="$tmp/x/$mod@$ver"
[ -d "$top" ] || die "$mod@$ver: the zip does not hold $mod@$ver/"
if [ -n "$(find "$tmp/x" ! -type f ! -type d -print -quit)" ]; then
	die "$mod@$ver: the zip holds something other than files and directories"
fi
if [ -n "$want_sum" ]; then
	# dirhash.Hash1: "h1:" + base64(SHA-256 of the lines "<sha256 hex>  <name>\n"
	# for every file, sorted by name), names as in the zip.
	hex=$(cd "$tmp/x" && find . -type f -printf '%P\n' | LC_ALL=C sort | tr '\n' '\0' |
		xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
	sum="h1:$(printf "$(sed 's/../\\x&/g' <<<"$hex")" | base64)"
	[ "$sum" = "$want_sum" ] || die "$mod@$ver from $got: hash $sum, want $want_sum"
fi

# What the go command does with a downloaded toolchain: restore the nested
# go.mod files (a module zip cannot hold them, so they travel as _go.mod) and
# set the execute bits of the commands.
find "$top" -name _go.mod -type f | while IFS= read -r f; do cp "$f" "${f%_go.mod}go.mod"; done
find "$top/pkg/tool" "$top/bin" -type f -exec chmod a+x {} +
find "$top/lib" -type f -name 'go_?*_?*_exec' -exec chmod a+x {} + 2>/dev/null || true
suitable "$top/bin/go" || die "$mod@$ver: bin/go does not run or is older than $min"
# A broken earlier copy goes (with $tmp); another setup may have finished
# first, and its copy is the same.
if [ -e "$dir" ] && ! suitable "$dir/bin/go"; then mv -T "$dir" "$tmp/old"; fi
mv -T "$top" "$dir" 2>/dev/null || [ -x "$dir/bin/go" ] || die "could not move the toolchain to $dir"
echo "setup: Go $want in ${dir#"$root"/}"
