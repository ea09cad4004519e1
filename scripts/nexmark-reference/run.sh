#!/bin/sh
# Recomputes the expected results of tests/sqllogic/testdata/nexmark.slt with a real Postgres 15:
# loads the fixture of gen.py (phase 1, then phase 2) and runs queries.sql after each phase.
#
#   scripts/nexmark-reference/run.sh            print the results of both phases
#   scripts/nexmark-reference/run.sh suites     also recompute the Postgres states of the views of joins.slt and
#                                               updating.slt at each check point and compare them with the .slt
#   scripts/nexmark-reference/run.sh | python3 scripts/nexmark-reference/build_slt.py > tests/sqllogic/testdata/nexmark.slt
#                                               regenerate nexmark.slt
#
# Postgres: set PGHOST/PGPORT/PGUSER to use a running server. Otherwise a throwaway cluster is created under
# $PGREF_DIR (default /tmp/pgnexmark; initdb/pg_ctl of Postgres 15, run as the postgres user when started as
# root; `apt-get install -y postgresql` provides them), started on a Unix socket only, and stopped at the end.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PGTZ=UTC PGDATABASE=${PGDATABASE:-postgres} PGOPTIONS='-c client_min_messages=warning'

started=
if [ -z "${PGHOST:-}" ]; then
  PGREF_DIR=${PGREF_DIR:-/tmp/pgnexmark}
  export PGHOST=$PGREF_DIR PGPORT=${PGPORT:-55437} PGUSER=postgres
  as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -c "$*"; else sh -c "$*"; fi; }
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
stop() { [ -n "$started" ] && as_pg "$PGBIN/pg_ctl -D $PGREF_DIR/data -m fast -w stop" >/dev/null || true; }
trap stop EXIT

psql_q() { psql -X -q -v ON_ERROR_STOP=1 -A -t -F ' ' -P null=NULL "$@"; }

# Each query's rows, sorted by bytes (as the sqllogic runner's rowsort compares them).
results() {
  psql_q -f "$HERE/queries.sql" | awk '
    /^-- q/ { if (n) flush(); name = $0; n = 0; next }
    { rows[++n] = $0 }
    function flush() { print name; cmd = "LC_ALL=C sort"; for (i = 1; i <= n; i++) print rows[i] | cmd; close(cmd) }
    END { flush() }'
}

psql_q -f "$HERE/schema.sql"
psql_q -f "$HERE/source_queries.sql" # the views of nexmark_source.slt's translations: queries.sql's q14 reads one
python3 "$HERE/gen.py" summary | sed 's/^/-- /'
python3 "$HERE/gen.py" sql 1 | psql_q
echo "-- ======== after phase 1"
results
python3 "$HERE/gen.py" sql 2 | psql_q
echo "-- ======== after phase 2 (final)"
results

if [ "${1:-}" = suites ]; then
  TESTDATA="$HERE/../../tests/sqllogic/testdata"
  echo "-- ======== joins.slt checks"
  psql_q -f "$HERE/joins_check.sql" | tee "${TMPDIR:-/tmp}/joins_check.out"
  echo "-- ======== updating.slt checks"
  psql_q -f "$HERE/updating_check.sql" | tee "${TMPDIR:-/tmp}/updating_check.out"
  python3 "$HERE/compare_slt.py" "$TESTDATA/joins.slt" "${TMPDIR:-/tmp}/joins_check.out" | sed 's/^/-- /'
  python3 "$HERE/compare_slt.py" "$TESTDATA/updating.slt" "${TMPDIR:-/tmp}/updating_check.out" | sed 's/^/-- /'
fi
