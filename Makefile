# Strata build, lint and test entry points. `make test` is what CI runs.
GO        ?= go
BIN       := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
export GOFLAGS := -buildvcs=false
# When no go on PATH is at least go.mod's version, `make setup` fetches the
# toolchain go.mod names into .toolchain/ (scripts/toolchain.sh); its bin
# goes first on PATH for every recipe, so go, gofmt and the go commands that
# tests and benchmarks run are all that one.
TOOLCHAIN_BIN := $(shell scripts/toolchain.sh --bindir)
export PATH := $(if $(TOOLCHAIN_BIN),$(TOOLCHAIN_BIN):)$(PATH)
# A module asking for a newer Go still gets it through the module proxy.
export GOTOOLCHAIN := auto

.PHONY: all build setup lint test test-long fuzz pgo bench-journal bench-stack bench-mcast bench-wor bench-nfs bench-mpcal bench-mpcal-go bench-geo bench-kv bench-log bench-tx bench-geo-kv up demo clean

all: build

# go build optimizes with cmd/strata/default.pgo (profile-guided); `make
# pgo` regenerates it after hot code changes.
build: setup
	$(GO) build -o $(BIN)/strata ./cmd/strata

pgo: setup
	GO=$(GO) scripts/pgo.sh

# Installs what the build and tests need on a fresh Debian machine.
setup:
	@scripts/setup.sh

lint: setup
	@echo "== gofmt"; out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -path ./.toolchain -prune -o -name '*.go' -print)); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@echo "== go vet"; $(GO) vet ./...
	@echo "== staticcheck"; \
	  if [ -x $(BIN)/staticcheck ] || GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) >/dev/null 2>&1; then \
	    $(BIN)/staticcheck ./...; \
	  else echo "staticcheck did not install; skipped"; fi

# Every test, with the race detector. Crash tests are time-bounded.
# -pgo=off: the profile changes how code is optimized, not what it does,
# and compiling cmd/strata's test with it would build every package twice.
test: lint
	$(GO) test -pgo=off -race -timeout 25m ./...
	# The transports again on one processor, where goroutines interleave
	# differently (this found a reader waiting on a blocked writer).
	GOMAXPROCS=1 $(GO) test -pgo=off -race -timeout 5m ./stack/transport
	GOMAXPROCS=1 $(GO) test -pgo=off -race -timeout 5m -run 'TestReal|TestStrataRoundTrip|TestRaw' ./stack/layers ./bench/stack

# Longer crash/kill campaigns (not in CI).
test-long: setup
	STRATA_CRASH_SECONDS=600 STRATA_KILL_ROUNDS=100 $(GO) test -race -timeout 60m ./journal/...
	# STRATA_SEEDS sets every seeded campaign's count; the flush allocation
	# check takes seconds a seed under -race and is not a fault campaign.
	STRATA_SEEDS=2000 $(GO) test -race -timeout 120m -skip '^TestFlushKeptCastAllocatesNothing$$' ./stack/layers
	STRATA_SEEDS=3000 $(GO) test -race -timeout 60m -run '^TestLinearizableUnderFaults$$' ./wor
	# The acceptor steps of 200 paxos campaign runs validated against
	# models/wor/WORAcceptors.tla with TLC (batches of 50 runs).
	STRATA_TRACE_SEEDS=200 $(GO) test -race -timeout 30m -run '^TestAcceptorTrace$$' ./wor
	# The kv service: the linearizability campaign (seeds per engine) and
	# repeated kill -9 / host cuts of the leader with real processes.
	STRATA_SEEDS=200 $(GO) test -race -timeout 90m -run '^TestLinearizableUnderFaults$$' ./kv
	STRATA_SEEDS=200 $(GO) test -race -timeout 60m -run '^(TestLinearizable|TestLeaderFailover)$$' ./smr
	STRATA_KV_ROUNDS=20 $(GO) test -race -timeout 30m -run '^(TestKVRealProcesses|TestKVNetns)$$' ./cmd/strata
	# strata up --secure --transport tcp: a second secured cluster (TLS and sealed links).
	STRATA_UP_TCP=1 $(GO) test -race -timeout 10m -run '^TestUpSecureTCP$$' ./cmd/strata
	# The primary-backup model with two clients (minutes of TLC).
	STRATA_PBKV_LONG=1 $(GO) test -timeout 60m -run '^TestPBKVLong$$' ./models
	# The shared log: appends, sequencer kills and holes (seeds per engine).
	STRATA_SEEDS=200 $(GO) test -race -timeout 60m -run '^(TestAppendSubscribe|TestSequencerFailover|TestHoleFill)$$' ./wormlog
	# The Raft KV store: its slower TLC configurations (two elections; the
	# log-check mutant), and 20 leader kills with real processes.
	STRATA_RAFTKV_TLC_LONG=1 $(GO) test -race -timeout 60m -run '^TestRaftKV' ./models
	STRATA_RAFTKV_ROUNDS=20 $(GO) test -race -timeout 30m -run '^TestRaftKVRealProcesses$$' ./cmd/strata
	# The larger configurations of the TLA+ models of the chain and ec
	# engines and of WormTX E3 (TLC, minutes each; models/README.md).
	STRATA_MODELS_LONG=1 $(GO) test -timeout 180m -run '^TestOwnModelsLong$$' ./models
	# The model of the stack's group layers (gms, sync, total) with every
	# member casting and any one crashing or leaving (models/stack).
	STRATA_MODELS_LONG=1 $(GO) test -timeout 60m -run '^TestStackModelLong$$' ./models

# Runs every fuzz target for FUZZTIME each (not in CI). scripts/fuzz.sh
# finds them: every func Fuzz... in a _test.go file.
FUZZTIME ?= 30s
fuzz: setup
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

bench-journal: build
	$(BIN)/strata bench journal

bench-stack: build
	$(BIN)/strata bench stack

bench-mcast: build
	$(BIN)/strata bench mcast

bench-wor: build
	$(BIN)/strata bench wor

bench-nfs: build
	$(BIN)/strata bench nfs

bench-mpcal: build
	$(BIN)/strata bench mpcal

bench-mpcal-go: build
	$(BIN)/strata bench mpcal-go

bench-geo: build
	$(BIN)/strata bench geo

bench-kv: build
	$(BIN)/strata bench kv

bench-log: build
	$(BIN)/strata bench log

bench-tx: build
	$(BIN)/strata bench tx

bench-geo-kv: build
	$(BIN)/strata bench geo-kv

# Strata's main job on an embedded default: a local 3-server cluster.
# UP_FLAGS: more flags for strata up, e.g. `make up UP_FLAGS=--secure`.
up: build
	$(BIN)/strata up $(UP_FLAGS)

demo: build
	$(BIN)/strata journal demo

clean:
	rm -rf $(BIN) strata-data
