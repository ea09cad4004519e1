# clinksql: `make run` starts the engine, `make test` runs what CI runs.
GO ?= go
# Packages whose goroutines meet: always under the race detector (the connectors whose commit, client or log runs
# beside the subtask: kafka, streamlog, the two-phase file protocol with its file and parquet sinks; NATS, the
# Postgres sink and the Postgres CDC source, whose commits and checkpoint notifications come from the coordinator).
RACE_PKGS := ./exec/... ./connectors/kafka/ ./connectors/streamlog/ ./connectors/txnfile/ ./connectors/file/ ./connectors/parquet/ \
	./connectors/nats/ ./connectors/postgres/ ./connectors/postgrescdc/ ./tests/natstest/ \
	./checkpoint/... ./state/... ./engine/... ./pgwire/...

.PHONY: all build run test test-tools vet bench bench-nexmark bench-latency bench-kafka crashtest difftest fuzz clean

all: build

build:
	$(GO) build -o bin/clinksql ./cmd/clinksql

# Serves ./clink-data on 127.0.0.1:4566 and prints the psql command that connects (SERVE_ARGS adds flags).
run: build
	./bin/clinksql serve $(SERVE_ARGS)

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# What the tests need beyond Go (psql, psycopg2, the JDBC driver and a JDK for tests/clients; PostgreSQL 15 for
# tests/difftest; chromium for web/console's headless browser test), installed with apt-get when missing; quiet
# and instant when everything is there.
test-tools:
	@./scripts/test-tools.sh

# The unit tests of every package but the concurrent ones (short mode: the crash harness runs a reduced number of
# iterations, the differential suite a short seeded run against PostgreSQL 15), then the real clients (psql, pgx,
# psycopg2, JDBC and a Kafka pipeline against `clinksql serve`; budget 2 minutes, -v shows each client's version and
# time), then the concurrent packages (RACE_PKGS), only under -race: running them twice took the cold CI run past
# its 15 minutes. Every suite has a timeout.
CLIENT_PKGS := ./tests/clients/...
test: test-tools vet
	$(GO) test -short -timeout 8m $$($(GO) list ./... | grep -v '/tests/clients' | grep -v -x -F "$$($(GO) list $(RACE_PKGS))")
	$(GO) test -short -timeout 3m -v $(CLIENT_PKGS)
	$(GO) test -short -race -timeout 8m $(RACE_PKGS)

# The full crash suites, CRASH_N seeded iterations each (default 200): the runtime's exactly-once suite over every
# mode and crash kind, then the harness that kill -9s the real `clinksql serve` (tests/crash: datagen jobs and a
# Kafka pipeline against a kfake process into an exactly-once Kafka sink, killed at random moments, between
# COMPLETED and the commit, and during in-doubt resolution; its last lines count the kills, in-doubt resolutions
# and receipts used; CRASH_SEED=n replays one of its iterations, a failure keeps its data directory in
# /tmp/crash-<seed>), the NATS pipeline (a nats-server: window aggregate into a NATS sink and Parquet) and the
# Postgres one (a PostgreSQL 15 cluster: CDC into an updating GROUP BY into a Postgres upsert sink), and the kills
# between a checkpoint's barrier and its completion. About 50 minutes on 2 cores.
crashtest:
	CRASH_N=$${CRASH_N:-200} $(GO) test -count=1 -run 'ExactlyOnce' -timeout 60m -v ./exec/
	CRASH_N=$${CRASH_N:-200} $(GO) test -count=1 -run 'TestCrashKill9|KillBetweenBarrierAndCompletion' -timeout 240m -v ./tests/crash/

# The differential suite at length: DIFF_N random queries (default 2000) from seed DIFF_SEED (default: from the
# clock, printed), each on clinksql (ad hoc and as a materialized view) and on PostgreSQL 15, compared as multisets.
# A mismatch prints the seed, the query, both results and a repro script.
difftest: test-tools
	DIFF_N=$${DIFF_N:-2000} $(GO) test -count=1 -run 'TestDifferential' -timeout 120m -v ./tests/difftest/

# Fuzzing: the pgwire protocol targets and the SQL lexer and parser, each for FUZZTIME (default 30s). `make test`
# runs only their seeds.
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLex$$' -fuzztime $(FUZZTIME) ./sql/parser/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./sql/parser/
	$(GO) test -run '^$$' -fuzz '^FuzzStartup$$' -fuzztime $(FUZZTIME) ./pgwire/
	$(GO) test -run '^$$' -fuzz '^FuzzMessages$$' -fuzztime $(FUZZTIME) ./pgwire/
	$(GO) test -run '^$$' -fuzz '^FuzzBinaryValues$$' -fuzztime $(FUZZTIME) ./pgwire/

# Benchmarks, reported as `BENCH <name> <value> <unit>` lines (BENCH=regexp selects some). -p 1: one package at a
# time, so benchmarks never share the two cores.
bench: build
	$(GO) test -p 1 -run '^$$' -bench "$${BENCH:-.}" -timeout 30m ./... > bench.out 2>&1; status=$$?; \
	awk -f scripts/benchlines.awk bench.out && exit $$status
	$(GO) run ./scripts/nexmark-bench -events $${NEXMARK_EVENTS:-200000} -queries $${NEXMARK_QUERIES:-q0,q1,q2,q5,q8} \
		-parallelism $${PARALLELISM:-1}
	$(GO) run ./scripts/nexmark-bench -latency -events $${LATENCY_EVENTS:-1000000} -parallelism $${PARALLELISM:-1}

# Every supported Nexmark query through the real engine, EVENTS events each (default 5M; the fastest, q0-q3, q8 and
# q11, at 10x EVENTS and q5, q15, q17, q22 at 4x, so each runs for ~2 CPU-seconds), at PARALLELISM (default 1), the median of 3 runs; writes
# docs/benchmarks.md at parallelism 1 only. At PARALLELISM > 1 each query's runs alternate with runs at
# parallelism 1, and BENCH nexmark_qN_pN_over_p1_cpu/_wall give the ratios. Then every query again over Flink's
# combined event table (bench/nexmark/ddl_combined.sql; BENCH nexmark_combined_qN_*), EVENTS events each, and the
# latency of q0 and q5 (as bench-latency).
bench-nexmark: build
	$(GO) run ./scripts/nexmark-bench -events $${EVENTS:-5000000} -parallelism $${PARALLELISM:-1} -table docs/benchmarks.md
	$(GO) run ./scripts/nexmark-bench -combined -scale=false -events $${EVENTS:-5000000} -parallelism $${PARALLELISM:-1} \
		-table docs/benchmarks.md
	$(GO) run ./scripts/nexmark-bench -latency -events $${EVENTS:-5000000} -parallelism $${PARALLELISM:-1} -table docs/benchmarks.md

# Latency of q0 and q5 (nexmark_qN_latency_p50_ms, _p99_ms): each at half its maximum rate (measured by a
# throughput run of EVENTS events, or MAX_RATE events/s), with latency markers (scripts/nexmark-bench/latency.go).
bench-latency: build
	$(GO) run ./scripts/nexmark-bench -latency -events $${EVENTS:-1000000} -parallelism $${PARALLELISM:-1} \
		-max-rate $${MAX_RATE:-0}

# Nexmark q0, q1, q2, q5, q7 and q8 reading JSON events from Kafka: a kfake broker process (tests/kafkatest) is
# loaded once with EVENTS events (default 1M; kfake holds them in memory: 0.4 GB at 1M, 1.1 GB at 5M), then each query
# runs in its own process; writes the section "Nexmark from Kafka" of docs/benchmarks.md.
bench-kafka: build
	$(GO) run ./scripts/nexmark-bench -kafka -events $${EVENTS:-1000000} -queries q0,q1,q2,q5,q7,q8 -table docs/benchmarks.md

clean:
	rm -rf bin
