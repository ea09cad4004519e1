# clinksql: `make run` starts the engine, `make test` runs what CI runs.
GO ?= go
# Packages whose goroutines meet: always under the race detector.
RACE_PKGS := ./exec/... ./checkpoint/... ./state/... ./engine/...

.PHONY: all build run test vet bench crashtest clean

all: build

build:
	$(GO) build -o bin/clinksql ./cmd/clinksql

run: build
	./bin/clinksql serve

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# The unit tests (short mode: the exactly-once crash suite runs a reduced number of iterations), then the
# concurrent packages again under -race. Every suite has a timeout.
test: vet
	$(GO) test -short -timeout 8m ./...
	$(GO) test -short -race -timeout 8m $(RACE_PKGS)

# The full exactly-once crash suite: CRASH_N seeded iterations (default 200) over every mode and crash kind.
crashtest:
	CRASH_N=$${CRASH_N:-200} $(GO) test -run 'ExactlyOnce' -timeout 60m -v ./exec/

# Benchmarks, reported as `BENCH <name> <value> <unit>` lines (BENCH=regexp selects some). -p 1: one package at a
# time, so benchmarks never share the two cores.
bench:
	$(GO) test -p 1 -run '^$$' -bench "$${BENCH:-.}" -timeout 30m ./... > bench.out 2>&1; status=$$?; \
	awk -f scripts/benchlines.awk bench.out && exit $$status

clean:
	rm -rf bin
