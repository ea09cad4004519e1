// Package pgtest starts throwaway PostgreSQL 15 clusters for tests: initdb into a temporary directory, a free
// loopback port, trust authentication, run as the postgres user when the test runs as root (Postgres refuses
// root). Options turn on logical replication (wal_level = logical, for the CDC source) and prepared transactions
// (max_prepared_transactions, for the two-phase-commit sink); Kill and Restart crash and recover the server.
//
// It is a non-test package so that every suite (the differential suite, the connectors, the crash harness) shares
// one harness. It must never be imported by the engine: only by tests.
package pgtest
