#!/bin/sh
# Recomputes tests/sqllogic/testdata/nexmark_source.slt (every Nexmark query of bench/nexmark over the bounded
# `nexmark` connector) with a real Postgres 15:
#
#   scripts/nexmark-reference/run_source.sh > tests/sqllogic/testdata/nexmark_source.slt
#   scripts/nexmark-reference/run_source.sh combined > tests/sqllogic/testdata/nexmark_source_combined.slt
#                                     the same queries and expected rows over the combined event table
#                                     (bench/nexmark/ddl_combined.sql, Flink's DDL, with the same generator
#                                     options)
#
# 1. exports the rows of the three streams of source_ddl.sql with the engine itself
#    (`bin/clinksql exec --format csv -c 'SELECT * FROM <stream>'`; `make build` when the binary is missing;
#    CLINKSQL=<path> uses another binary);
# 2. loads them into Postgres (source_schema.sql) and creates the Postgres translations of the queries as views
#    q0 ... q22 (source_queries.sql);
# 3. build_source_slt.py runs every check of source_checks.sql against those views and writes the .slt: the DDL,
#    one CREATE MATERIALIZED VIEW per query (the text of bench/nexmark/qN.sql, INSERT target replaced), `wait`,
#    then the same checks with the Postgres rows as expected results.
#
# Postgres: set PGHOST/PGPORT/PGUSER to use a running server. Otherwise a throwaway cluster is created under
# $PGREF_DIR (default /tmp/pgnexmark-source; initdb/pg_ctl of Postgres 15, run as the postgres user when started
# as root; `apt-get install -y postgresql` provides them), started on a Unix socket only, and stopped at the end.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
CLINKSQL=${CLINKSQL:-$ROOT/bin/clinksql}
export PGTZ=UTC PGDATABASE=${PGDATABASE:-postgres} PGOPTIONS='-c client_min_messages=warning'

if [ ! -x "$CLINKSQL" ]; then
  (cd "$ROOT" && make build) >&2
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/nexmark-source.XXXXXX")
started=
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -c "$*"; else sh -c "$*"; fi; }
stop() {
  [ -n "$started" ] && as_pg "$PGBIN/pg_ctl -D $PGREF_DIR/data -m fast -w stop" >/dev/null || true
  rm -rf "$TMP"
}
trap stop EXIT

# 1. The generated rows, as the engine produces them.
for t in person auction bid; do
  "$CLINKSQL" exec --format csv --data-dir "$TMP/data-$t" -f "$HERE/source_ddl.sql" -c "SELECT * FROM $t" \
    >"$TMP/$t.csv"
done

if [ -z "${PGHOST:-}" ]; then
  PGREF_DIR=${PGREF_DIR:-/tmp/pgnexmark-source}
  export PGHOST=$PGREF_DIR PGPORT=${PGPORT:-55438} PGUSER=postgres
  if [ ! -d "$PGREF_DIR/data" ]; then
    mkdir -p "$PGREF_DIR"
    [ "$(id -u)" = 0 ] && chown postgres "$PGREF_DIR"
    as_pg "$PGBIN/initdb -D $PGREF_DIR/data -U postgres --auth=trust -E UTF8 --locale=C.UTF-8" >"$PGREF_DIR/init.log"
  fi
  if ! "$PGBIN/pg_isready" -q; then
    as_pg "$PGBIN/pg_ctl -D $PGREF_DIR/data -l $PGREF_DIR/log -w -o \"-p $PGPORT -k $PGREF_DIR -c listen_addresses=''\" start" >/dev/null
    started=1
  fi
fi

psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

# 2. Load, translate.
psql_q -f "$HERE/source_schema.sql"
for t in person auction bid; do
  psql_q -c "COPY $t FROM STDIN (FORMAT csv, HEADER true)" <"$TMP/$t.csv"
done
psql_q -f "$HERE/source_queries.sql"

# 3. Check queries in Postgres, the .slt on stdout.
python3 "$HERE/build_source_slt.py" "$@"
