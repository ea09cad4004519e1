// Package clients drives a real `clinksql serve` process with the clients people use: psql, pgx, Python's
// psycopg2 and JDBC. Each test starts its own server on a fresh data directory and a free loopback port, runs one
// client through the same scenario (scenario_test.go: a stream with a watermark, a tumbling-window materialized
// view, inserts through a prepared statement with parameters, FLUSH, a SELECT whose values and types are checked),
// and stops the server with SIGTERM, which must exit 0.
//
// A client whose tool is missing fails the test: `make test` (make test-tools) installs psql, psycopg2 for Debian's
// /usr/bin/python3, the JDBC driver (/usr/share/java/postgresql.jar) and a JDK. On a developer machine without
// them, CLINKSQL_CLIENTS_OPTIONAL=1 turns those failures into skips. CLINKSQL_PYTHON names the interpreter to use
// (default: the first of /usr/bin/python3 and python3 on PATH that can import psycopg2); CLINKSQL_JDBC_JAR the
// driver jar.
package clients
