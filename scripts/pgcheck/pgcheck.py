#!/usr/bin/env python3
"""Checks the expected results of a sqllogictest file against Postgres 15.

    python3 scripts/pgcheck/pgcheck.py tests/sqllogic/testdata/subqueries.slt [...]
    python3 scripts/pgcheck/pgcheck.py --fill FILE.slt    write Postgres' rows as the expected rows of every case
                                                          it checks (for a new suite; review the diff)

The file is replayed in order against a fresh Postgres database, translated where the dialects differ:

  - CREATE STREAM / CREATE TABLE name (cols, WATERMARK FOR ...) WITH (...) becomes CREATE TABLE name (cols): the
    WATERMARK clause, the WITH options and NOT ENFORCED are dropped;
  - CREATE MATERIALIZED VIEW becomes CREATE VIEW (Postgres evaluates it at each query, over every row so far:
    what a streaming view shows once FLUSH made everything visible);
  - flush, restart, wait and sleep do nothing; statements and queries that expect an error are skipped;
  - a case preceded by a comment line `# pg: skip (why)` is skipped (streaming-only semantics: watermarks, late
    rows), and `# pg: <sql>` runs <sql> in Postgres instead of the case's own text (a spelling Postgres needs).

Every other `query` is run in Postgres and its rows, formatted as the runner formats ours (NULL, (empty), t/f,
rowsort and valuesort), must equal the expected rows. Exit status 1 on any difference.

Postgres: PGHOST/PGPORT/PGUSER select a running server; otherwise a throwaway cluster of Postgres 15 is created
under $PGCHECK_DIR (default /tmp/pgcheck) on a Unix socket, as scripts/nexmark-reference/run.sh does.
"""
import os
import re
import subprocess
import sys

PGBIN = os.environ.get("PGBIN", "/usr/lib/postgresql/15/bin")


def as_pg(cmd):
    if os.getuid() == 0:
        return subprocess.run(["su", "postgres", "-c", cmd], check=True, capture_output=True)
    return subprocess.run(["sh", "-c", cmd], check=True, capture_output=True)


def ensure_server():
    if os.environ.get("PGHOST"):
        return None
    d = os.environ.get("PGCHECK_DIR", "/tmp/pgcheck")
    port = os.environ.get("PGPORT", "55438")
    os.environ.update(PGHOST=d, PGPORT=port, PGUSER="postgres")
    if not os.path.isdir(d + "/data"):
        os.makedirs(d, exist_ok=True)
        if os.getuid() == 0:
            subprocess.run(["chown", "postgres", d], check=True)
        as_pg(f"{PGBIN}/initdb -D {d}/data -U postgres --auth=trust -E UTF8 --locale=C.UTF-8")
    if subprocess.run([PGBIN + "/pg_isready", "-q"]).returncode != 0:
        as_pg(f"{PGBIN}/pg_ctl -D {d}/data -l {d}/log -w -o \"-p {port} -k {d} -c listen_addresses=''\" start")
        return d
    return None


def psql(db, sql):
    """Runs sql, returns rows as lists of values (None for NULL)."""
    env = dict(os.environ, PGTZ="UTC", PGOPTIONS="-c client_min_messages=warning")
    # Unit separator and record separator: values may hold spaces and newlines.
    r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-A", "-t", "-F", "\x1f", "-R", "\x1e",
                        "-P", "null=\x02NULL", "-d", db, "-c", sql], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    out = r.stdout
    if out.endswith("\n"):
        out = out[:-1]
    if out == "":
        return []
    return [[None if v == "\x02NULL" else v for v in rec.split("\x1f")] for rec in out.split("\x1e")]


def fmt(v):
    if v is None:
        return "NULL"
    if v == "":
        return "(empty)"
    return v


def translate(sql):
    s = sql.strip().rstrip(";")
    m = re.match(r"(?is)CREATE\s+(STREAM|TABLE)\s+(IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*)\)\s*(WITH\s*\(.*\))?\s*$", s)
    if m:
        body = m.group(4)
        body = re.sub(r"(?is),\s*WATERMARK\s+FOR\s+.*$", "", body)
        body = re.sub(r"(?i)\s+NOT\s+ENFORCED", "", body)
        return f"CREATE TABLE {m.group(3)} ({body})"
    s = re.sub(r"(?i)^CREATE\s+MATERIALIZED\s+VIEW", "CREATE VIEW", s)
    return s


def cases(lines):
    """Yields (line number, header, sql, expected rows, pg directive, [first, end) lines of the rows)."""
    i, directive = 0, None
    while i < len(lines):
        line = lines[i]
        m = re.match(r"#\s*pg:\s*(.*)$", line)
        if m:
            directive = m.group(1).strip()
            i += 1
            continue
        if line.startswith("statement ") or line.startswith("query "):
            start, header = i + 1, line.split()
            j = i + 1
            sql = []
            while j < len(lines) and lines[j].strip() and lines[j].strip() != "----":
                sql.append(lines[j])
                j += 1
            rows = []
            first = j
            if j < len(lines) and lines[j].strip() == "----":
                j += 1
                first = j
                while j < len(lines) and lines[j].strip():
                    rows.append(lines[j])
                    j += 1
            yield start, header, "\n".join(sql), rows, directive, (first, j)
            directive = None
            i = j
            continue
        if line.strip() and not line.startswith("#"):
            directive = None
        i += 1


def check(path, db, fill=False):
    lines = open(path).read().split("\n")
    bad = checked = 0
    fills = []
    for ln, header, sql, rows, directive, span in cases(lines):
        if directive and directive.startswith("skip"):
            continue
        if len(header) > 1 and header[1] == "error":
            continue
        text = directive if directive else translate(sql)
        if header[0] == "statement":
            psql(db, text)
            continue
        mode = header[2] if len(header) > 2 else ""
        got = psql(db, text)
        if mode == "valuesort":
            out = sorted(fmt(v) for r in got for v in r)
            want = sorted(v for r in rows for v in r.split(" "))
        else:
            out = [" ".join(fmt(v) for v in r) for r in got]
            want = list(rows)
            if mode == "rowsort":
                out.sort()
                want.sort()
        checked += 1
        if fill:
            fills.append((span, out))
            continue
        if out != want:
            bad += 1
            print(f"{path}:{ln}: Postgres differs\n  sql:  {sql.strip()}\n  want: {want}\n  pg:   {out}")
    if fill:
        for (first, end), out in reversed(fills):
            lines[first:end] = out
        open(path, "w").write("\n".join(lines))
        print(f"{path}: {checked} queries filled from Postgres")
        return True
    print(f"{path}: {checked} queries checked against Postgres, {bad} differ")
    return bad == 0


def main():
    args = sys.argv[1:]
    fill = "--fill" in args
    args = [a for a in args if a != "--fill"]
    started = ensure_server()
    ok = True
    try:
        for path in args:
            db = "pgcheck_" + re.sub(r"\W", "_", os.path.basename(path))
            env = dict(os.environ)
            subprocess.run(["psql", "-X", "-q", "-d", "postgres", "-c", f"DROP DATABASE IF EXISTS {db}"],
                           check=True, env=env, capture_output=True)
            subprocess.run(["psql", "-X", "-q", "-d", "postgres", "-c", f"CREATE DATABASE {db}"],
                           check=True, env=env, capture_output=True)
            ok = check(path, db, fill) and ok
    finally:
        if started:
            as_pg(f"{PGBIN}/pg_ctl -D {started}/data -m fast -w stop")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
