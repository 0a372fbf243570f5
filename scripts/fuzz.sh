#!/usr/bin/env bash
# Runs every fuzz target in the repository for $FUZZTIME each (`make fuzz`).
#
#   scripts/fuzz.sh            run them all, one after the other
#   scripts/fuzz.sh REGEXP     only the targets whose name matches REGEXP
#   scripts/fuzz.sh --list     print "PACKAGE-DIR TARGET" lines and exit
#
# The targets are found, not listed: every top-level `func FuzzXxx(` in a
# _test.go file (tracked or new; gofmt puts each declaration at the start of
# a line, and `make lint` checks gofmt), in the module that holds its
# directory. A target go test then does not run (say its file is left out by
# a build constraint) is reported as a failure rather than skipped, so a new
# target is either fuzzed or makes this fail. A target that fails (a crasher
# is written to its package's testdata/fuzz) does not stop the others; the
# exit status is 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
mode=run match=
case ${1:-} in
--list) mode=list ;;
-*) echo "usage: $0 [--list | REGEXP]" >&2; exit 2 ;;
*) match=${1:-} ;;
esac

# Test files: git's view (including new, unignored files), else a walk.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files --cached --others --exclude-standard -- '*_test.go')
else
	files=$(find . \( -name .toolchain -o -name .git \) -prune -o -name '*_test.go' -print | sed 's|^\./||')
fi

# "dir name" for every fuzz target: go test's rule is the prefix Fuzz, then
# nothing or a character that is not a lower-case letter.
targets=$(
	while IFS= read -r f; do
		[ -f "$f" ] || continue
		case /$f in */testdata/* | */.toolchain/*) continue ;; esac
		sed -n 's/^func \(Fuzz[^(]*\)(.*/\1/p' "$f" | grep -E '^Fuzz([^a-z]|$)' |
			while IFS= read -r name; do echo "$(dirname "$f") $name"; done
	done <<<"$files" | LC_ALL=C sort -u
)
if [ -n "$match" ]; then
	targets=$(awk -v re="$match" '$2 ~ re' <<<"$targets")
fi
if [ -z "$targets" ]; then
	echo "fuzz: no fuzz targets${match:+ match $match}" >&2
	exit 1
fi
if [ $mode = list ]; then
	echo "$targets"
	exit 0
fi

# modroot DIR: the nearest directory at or above DIR with a go.mod.
modroot() {
	local d=$1
	until [ -f "$d/go.mod" ]; do
		[ "$d" != . ] || return 1
		d=$(dirname "$d")
	done
	echo "$d"
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=()
n=0
while read -r dir name; do
	n=$((n + 1))
	mod=$(modroot "$dir") || { failed+=("$dir $name (no go.mod)"); continue; }
	rel=$dir
	[ "$mod" = . ] || rel=${dir#"$mod"}
	echo "== ./$dir $name"
	(cd "$mod" && $GO test "./${rel#/}" -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 1s) 2>&1 | tee "$out"
	st=${PIPESTATUS[0]}
	if [ "$st" != 0 ]; then
		failed+=("./$dir $name")
	elif grep -q 'no fuzz tests to fuzz' "$out"; then
		failed+=("./$dir $name (go test found no such fuzz target)")
	fi
done <<<"$targets"

if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: ${#failed[@]} of $n targets failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz: all $n targets ran for $FUZZTIME"
