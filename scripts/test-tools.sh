#!/usr/bin/env bash
# `make test-tools` (a prerequisite of `make test`): installs what the tests need beyond Go, from Debian's packages,
# only what is missing, so a second run is quiet and takes no time.
#
# - tests/clients drives `clinksql serve` with psql, Python psycopg2 and JDBC (driver jar and a JDK).
#   psycopg2 from Debian serves Debian's own interpreter (/usr/bin/python3), which need not be the python3 first on
#   PATH: the tests look for the interpreter that can import it (CLINKSQL_PYTHON overrides).
# - tests/difftest compares clinksql with a PostgreSQL 15 server it starts itself (initdb, postgres), from
#   postgresql-15 (PGBIN overrides where the tests look: default /usr/lib/postgresql/15/bin).
# - web/console's browser test loads the console in Debian's chromium, headless (CLINKSQL_CHROMIUM overrides
#   which browser binary the test runs).
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

pkgs=()
if ! /usr/bin/python3 -c 'import psycopg2' >/dev/null 2>&1; then
	pkgs+=(python3-psycopg2)
fi
if [ ! -f /usr/share/java/postgresql.jar ]; then
	pkgs+=(libpostgresql-jdbc-java)
fi
if ! command -v javac >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
	pkgs+=(default-jdk-headless)
fi
# psql --version, not command -v: Debian's pg_wrapper stays as /usr/bin/psql when every client version is gone.
if ! psql --version >/dev/null 2>&1; then
	pkgs+=(postgresql-client)
fi
if [ ! -x "$PGBIN/initdb" ] || [ ! -x "$PGBIN/postgres" ]; then
	pkgs+=(postgresql-15)
fi
if ! command -v chromium >/dev/null 2>&1; then
	pkgs+=(chromium)
fi
if [ ${#pkgs[@]} -eq 0 ]; then
	exit 0
fi

echo "test-tools: installing ${pkgs[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
	echo "test-tools: error: apt-get not found; install ${pkgs[*]} (Debian names) by hand" >&2
	exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "test-tools: error: not root and no sudo; install ${pkgs[*]} by hand" >&2
		exit 1
	fi
	sudo=(sudo -n)
fi
log=$(mktemp)
# DPkg::Lock::Timeout: wait for another apt run to finish rather than fail at once.
if ! "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 update -qq >"$log" 2>&1 ||
	! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
		--no-install-recommends "${pkgs[@]}" >>"$log" 2>&1; then
	cat "$log" >&2
	echo "test-tools: error: apt-get could not install ${pkgs[*]}" >&2
	exit 1
fi
rm -f "$log"
# Check what was installed, so a package that installs but does not provide the tool fails here, clearly.
/usr/bin/python3 -c 'import psycopg2' || { echo "test-tools: error: /usr/bin/python3 cannot import psycopg2" >&2; exit 1; }
[ -f /usr/share/java/postgresql.jar ] || { echo "test-tools: error: /usr/share/java/postgresql.jar missing" >&2; exit 1; }
command -v javac >/dev/null && command -v java >/dev/null || { echo "test-tools: error: javac/java missing" >&2; exit 1; }
psql --version >/dev/null || { echo "test-tools: error: psql missing" >&2; exit 1; }
[ -x "$PGBIN/initdb" ] && [ -x "$PGBIN/postgres" ] || { echo "test-tools: error: $PGBIN/initdb or postgres missing" >&2; exit 1; }
command -v chromium >/dev/null || { echo "test-tools: error: chromium missing" >&2; exit 1; }
