#!/bin/bash
# Regenerates cmd/strata/default.pgo, the CPU profile the Go compiler uses
# for profile-guided optimization of the strata binary (go build picks it
# up by itself; see docs/benchmarks.md, "Profile-guided optimization").
#
# The profile is of Strata's own processes running its benchmarks' Strata
# sides, peers left out: the stack's code-latency cells in every mode, the
# RPC round trips and the group multicast over real sockets (the server and
# member processes write their own profiles), the journal, and the
# write-once registers. Run it after changing hot code; a stale profile
# still builds, it only optimizes less. Takes about a minute and a half.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
out=$(mktemp -d /tmp/strata-pgo.XXXXXX)
trap 'rm -rf "$out"' EXIT
bin="$out/strata"
# Profiled without a profile, so the new one does not feed on the old.
$GO build -pgo=off -o "$bin" ./cmd/strata
run() {
	echo "== strata $*" >&2
	STRATA_CPUPROFILE="$out/%p.prof" "$bin" "$@" >/dev/null
}
run bench stack --code-only --code-n 30000 --rounds 1
run bench stack --no-jgroups --rounds 1 --n 20000 --code-n 1000
run bench mcast --no-jgroups --rounds 1 --count 200000
run bench journal --quick --rounds 1 --plot '' --disk-dir "$out/journal" --tmpfs-dir ''
run bench wor --quick --no-etcd --lengths '' --plot '' --dir "$out/wor"
# A process killed before it stopped its profile left an empty file.
profiles=()
for f in "$out"/*.prof; do [ -s "$f" ] && profiles+=("$f"); done
echo "== merging ${#profiles[@]} profiles into cmd/strata/default.pgo" >&2
$GO tool pprof -proto "${profiles[@]}" >"$out/merged.pgo"
mv "$out/merged.pgo" cmd/strata/default.pgo
