# Herald — make targets. `make help` lists them.
GO ?= go
BIN := bin/herald
DATA ?= ./data

.PHONY: help run build test test-short test-postgres test-nodes chaos bench bench-micro profile mcp-e2e lint tidy clean

help: ## Show the targets.
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

run: build ## Start Herald in sandbox mode (simulator, demo user and key) on 127.0.0.1:8080.
	$(BIN) serve --sandbox --data $(DATA)

build: ## Build bin/herald.
	$(GO) build -o $(BIN) ./cmd/herald

test: ## Run the whole test suite with the race detector.
	$(GO) test -race -count=1 -timeout 15m ./...

# The packages whose tests store data through storetest or the full-app harness (apptest), run again on PostgreSQL
# by test-postgres (the store's own suite runs on both backends in `make test` already).
PG_TEST_PKGS := ./actors/... ./cmd/herald/app/ ./http/api/ ./http/live/ ./http/oauth/ ./http/mcpserver/ ./http/accountlink/ ./http/session/ ./http/server/

test-postgres: ## Run the actor and API tests on PostgreSQL (HERALD_TEST_STORE=postgres; initdb and pg_ctl from Debian's postgresql package).
	HERALD_TEST_STORE=postgres $(GO) test -race -count=1 -timeout 20m $(PG_TEST_PKGS)

# NODES selects the tests of the multi-process suite (all of them by default; .ci/run runs those that
# pass today, docs/cluster.md says which do not yet and why).
NODES ?= ^TestNodes

test-nodes: ## The multi-process suite of several nodes: PostgreSQL, herald sim and herald serve --node-addr over one schema, each behind a proxy the tests can cut (cmd/herald/nodes_process_test.go; NODES=regexp).
	HERALD_NODES=1 $(GO) test -count=1 -run '$(NODES)' -v -timeout 15m ./cmd/herald/

test-short: ## Run the tests without the race detector.
	$(GO) test -count=1 ./...

chaos: ## The chaos test: 10 rounds of mixed load against a server killed (SIGKILL) at a random moment of each, with the simulator's faults on; invariants checked after every restart (HERALD_CHAOS_SEED=N replays a run).
	HERALD_CHAOS=1 $(GO) test -count=1 -run '^TestChaos$$' -v -timeout 10m ./cmd/herald/

bench: build ## Run the bench suite against a real server process, then create-drafts, publish, recovery and nodes on PostgreSQL, then three interleaved pairs of the publish on bbolt and on PostgreSQL (add ARGS="--quick" for a smoke run).
	@# The PostgreSQL run goes ahead when a scenario of the first failed; make then fails.
	rc=0; $(BIN) bench --out bench/out/latest.json $(ARGS) || rc=$$?; \
	bench/postgres.sh $(BIN) --out bench/out/postgres.json $(ARGS) || rc=$$?; \
	mkdir -p bench/out; HERALD_PG_PAIRS=3 HERALD_PG_FULL=1 bench/postgres.sh $(BIN) $(ARGS) > bench/out/postgres-pairs.txt || rc=$$?; \
	cat bench/out/postgres-pairs.txt; \
	exit $$rc

SCENARIO ?= publish
PROFILE_DIR ?= bench/out/profile

profile: build ## Profile one bench scenario (SCENARIO=publish; ARGS=--quick): CPU and allocation profiles and each thread's CPU (/proc) of its measured phases (publish: the load, then the drain after it) into bench/out/profile/<phase>/ (PROFILE_DIR), top buckets printed.
	rm -rf $(PROFILE_DIR)
	$(BIN) bench --scenario $(SCENARIO) --profile $(PROFILE_DIR) $(ARGS)

BENCH_MICRO := ^Benchmark(GroupCommit|Codec|Store|Ask|Dispatcher|Directory|Budgets|Scheduler|SendLoopback|PublishX|PublishCanned)
BENCH_MICRO_PKGS := ./persistence/ ./actors/ ./actors/account/ ./actors/scheduler/ ./platforms/

bench-micro: ## Run the Go micro-benchmarks: store, codec, directory, Ask, rate budget, scheduler, one network call (benchstat-comparable; save two runs and `benchstat old.txt new.txt`).
	$(GO) test -run '^$$' -bench '$(BENCH_MICRO)' -benchmem -benchtime 500ms -count 6 -timeout 30m $(BENCH_MICRO_PKGS)

mcp-e2e: ## The MCP endpoint against the official clients (TypeScript SDK with key and OAuth, Inspector CLI) and a browser's preflight on a throwaway sandbox; needs node/npm, installs from npm (not part of `make test`; .ci/run runs it).
	e2e/mcp/run.sh

# golangci-lint, pinned: `make lint` installs this version from the Go module proxy when the one
# on PATH (or in GOPATH/bin) is another or none. .golangci.yml says what it checks.
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(shell $(GO) env GOPATH)/bin/golangci-lint

lint: ## gofmt, go vet and golangci-lint (pinned; installed on first use).
	@test -z "$$(gofmt -l .)" || (gofmt -l . && exit 1)
	$(GO) vet ./...
	@$(GOLANGCI_LINT) version 2>/dev/null | grep -q "version $(patsubst v%,%,$(GOLANGCI_LINT_VERSION))" || \
		$(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	$(GOLANGCI_LINT) run ./...

tidy: ## go mod tidy.
	$(GO) mod tidy

clean: ## Remove build outputs (not the data directory).
	rm -rf bin bench/out
