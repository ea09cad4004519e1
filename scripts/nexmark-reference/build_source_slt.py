#!/usr/bin/env python3
"""Writes tests/sqllogic/testdata/nexmark_source.slt; run by run_source.sh, after it has loaded the streams into
Postgres and created the translated views (source_queries.sql): runs each check of source_checks.sql there with
psql (PGHOST etc. from the environment) and prints the .slt on stdout.

The engine side keeps the texts of bench/nexmark/qN.sql (Flink's published queries with our DDL): only
`INSERT INTO nexmark_qN` became `CREATE MATERIALIZED VIEW qN AS` (for q20, whose select list names dateTime and
extra twice, `CREATE MATERIALIZED VIEW q20 (<the sink's column names>) AS`) and the final `;` went.
"""
import csv
import io
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
# q12's processing-time windows follow the engine's clock, here the test clock, set before its view starts and
# never moved: every bid arrives in the window of that instant, which fires at the end of input.
PROCESSING_TIME = "2026-01-02 12:00:03"
QUERIES = ["q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9", "q10", "q11", "q12", "q13", "q14", "q15", "q16", "q17", "q18", "q19",
           "q20", "q21", "q22"]
NULL = "<<NULL>>"

HEADER = """\
# Every Nexmark query of bench/nexmark (q0-q22: Flink's published texts as the engine runs them;
# q6 adapted, see bench/nexmark/q6.sql) over the bounded `nexmark` connector, each as a materialized view: the text
# of bench/nexmark/qN.sql with `INSERT INTO nexmark_qN` replaced by `CREATE MATERIALIZED VIEW qN AS` (q20: with a
# column list, see there; q6 too, its two views before it). q10 writes a partitioned CSV sink, as in the bench:
# its two minute partitions are read back by file streams over their directories once the jobs are done. q12's
# processing-time windows follow the test clock (SET testing.processing_time), set before its view and never
# moved: every bid falls in the window of that instant, which fires at the end of input. q13's side input is a
# table of a PostgreSQL server of the file's own (the runner's `external postgres`, ${PG_URL}), created as
# nexmark-bench creates it, and read by a lookup join.
# q14's count_char is the wasm function of its file, its module the one the sqllogic runner puts into the data
# directory (udf/countchar.wasm, built from exec/wasm/testdata/countchar); in Postgres it is a SQL function,
# length(s) - length(replace(s, left(c, 1), '')).
#
# GENERATED: do not edit by hand. The expected rows come from Postgres 15: scripts/nexmark-reference/run_source.sh
# exports the rows of the three streams below with the engine (`clinksql exec --format csv`), loads them into a
# throwaway Postgres, creates Postgres translations of the queries as views (source_queries.sql: window TVFs as
# date_bin arithmetic, HOP via generate_series, SESSION by gaps-and-islands, DATE_FORMAT as to_char,
# SPLIT_INDEX(s, d, i) as split_part(s, d, i + 1), REGEXP_EXTRACT as regexp_match, AVG as round(avg, 16)) and runs
# each check query below (source_checks.sql) unchanged against them. Regenerate with
#   scripts/nexmark-reference/run_source.sh > tests/sqllogic/testdata/nexmark_source.slt
#
# The sources are bounded (4000 events, seed 2): every window fires at the end of input, and each stream is
# generated in event-time order, so no row is late. Event times are 20 ms apart ('first-event.rate' = '50'),
# from 2026-01-01 23:59:30 to 2026-01-02 00:00:49.98, so there are several windows and two days.
# Large results are checked by aggregates that a wrong, missing or extra row would change (counts, sums, row
# hashes MOD(a * 7919 + b * 104729 + c, 1000003), times and string lengths weighted by another column of the row)
# plus a few exact rows.
"""


# After the jobs finish: q10's output read back, each partition by its directory (the files hold no partition
# column), every file by a glob, and each partition's _SUCCESS file (a stream over a missing path is refused).
Q10_COLS = "(auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3), extra VARCHAR)"
AFTER_WAIT = [
    "CREATE STREAM q10_all %s\n  WITH (connector = 'file', format = 'csv', path = 'out/q10/dt=*/hm=*/*.csv')" % Q10_COLS,
    "CREATE STREAM q10_2359 %s\n  WITH (connector = 'file', format = 'csv', path = 'out/q10/dt=2026-01-01/hm=23%%3A59')"
    % Q10_COLS,
    "CREATE STREAM q10_0000 %s\n  WITH (connector = 'file', format = 'csv', path = 'out/q10/dt=2026-01-02/hm=00%%3A00')"
    % Q10_COLS,
    "CREATE STREAM q10_2359_success (x VARCHAR)\n"
    "  WITH (connector = 'file', format = 'csv', path = 'out/q10/dt=2026-01-01/hm=23%3A59/_SUCCESS')",
    "CREATE STREAM q10_0000_success (x VARCHAR)\n"
    "  WITH (connector = 'file', format = 'csv', path = 'out/q10/dt=2026-01-02/hm=00%3A00/_SUCCESS')",
]


# q13's side input, as scripts/nexmark-bench/sideinput.go creates it (and source_queries.sql for the reference).
SIDE_INPUT = ("CREATE TABLE nexmark_side_input (key bigint PRIMARY KEY, value text);\n"
              "INSERT INTO nexmark_side_input SELECT k, 'side-' || k FROM generate_series(0, 9999) AS k")


def query_text(q):
    text = open(os.path.join(ROOT, "bench", "nexmark", q + ".sql")).read()
    if q == "q13":
        # its side-input stream; its view B is q12's, already there
        side = re.search(r"^CREATE STREAM side_input .*?;$", text, re.M | re.S).group(0)[:-1]
        marker = "INSERT INTO nexmark_q13\n"
        body = text[text.index(marker) + len(marker):].rstrip()[:-1]
        return side + "\n\nstatement ok\nCREATE MATERIALIZED VIEW q13 AS\n" + body
    if q == "q10":
        # a sink and the job that writes it, as the bench runs them
        stmts = [st.strip() for st in re.sub(r"^--.*\n", "", text, flags=re.M).split(";") if st.strip()]
        assert len(stmts) == 2 and all("\n\n" not in st for st in stmts), stmts
        return "\n\nstatement ok\n".join(stmts)
    marker = "INSERT INTO nexmark_%s\n" % q
    body = text[text.index(marker) + len(marker):].rstrip()
    assert body.endswith(";"), q
    body = body[:-1]
    assert "\n\n" not in body, q
    head = "CREATE MATERIALIZED VIEW %s AS" % q
    if q == "q14":
        fn = re.search(r"^CREATE FUNCTION .*;$", text, re.M).group(0)[:-1]
        head = fn.replace("${WASM_DIR}/count_char.wasm", "udf/countchar.wasm") + "\n\nstatement ok\n" + head
    if q in ("q6", "q20"):
        # q6's AVG has no name of its own, q20 repeats names: the view takes the sink's column names
        sink = re.search(r"CREATE SINK nexmark_%s \((.*?)\)\s*WITH" % q, text, re.S).group(1)
        cols = [c.split()[0] for c in re.split(r",\s*(?![^(]*\))", " ".join(sink.split()))]
        head = "CREATE MATERIALIZED VIEW %s (%s) AS" % (q, ", ".join(cols))
        # wrap the long column list
        out, line = [], ""
        for word in head.split(" "):
            if line and len(line) + 1 + len(word) > 110:
                out.append(line)
                line = "  " + word
            else:
                line = (line + " " + word) if line else word
        head = "\n".join(out + [line])
    if q in ("q6", "q12"):
        views = re.findall(r"^CREATE VIEW .*?;$", text, re.M | re.S)
        head = "".join(v[:-1] + "\n\nstatement ok\n" for v in views) + head
    if q == "q12":
        head = "SET testing.processing_time = '%s'\n\nstatement ok\n" % PROCESSING_TIME + head
    return head + "\n" + body


def parse_checks():
    """Sections of source_checks.sql: {name, notes, checks: [{types, sort, sql, notes}]}."""
    sections, cur, check, notes = [], None, None, []
    for line in open(os.path.join(HERE, "source_checks.sql")).read().splitlines():
        if check is not None:  # inside a check's SQL, up to the line ending in ';'
            check["sql"].append(line)
            if line.rstrip().endswith(";"):
                check["sql"] = "\n".join(check["sql"]).rstrip()[:-1]
                check, notes = None, []
        elif line.startswith("-- ## "):
            cur = {"name": line[6:].strip(), "notes": [], "checks": []}
            sections.append(cur)
            notes = cur["notes"]
        elif cur is None:
            continue
        elif line.startswith("-- check "):
            words = line[9:].split()
            own = notes if notes is not cur["notes"] else []
            check = {"types": words[0], "sort": words[1] if len(words) > 1 else "", "sql": [], "notes": own}
            cur["checks"].append(check)
        elif line.startswith("-- "):
            notes.append(line[3:])
        elif line.strip():
            raise SystemExit("source_checks.sql: SQL outside a check: " + line)
    assert check is None, "unterminated check"
    return sections


def postgres_rows(sql, ncols):
    out = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "--csv", "-t", "-P", "null=" + NULL,
                          "-c", sql], check=True, capture_output=True, text=True).stdout
    rows = []
    for rec in csv.reader(io.StringIO(out)):
        assert len(rec) == ncols, (sql, rec)
        vals = ["NULL" if v == NULL else "(empty)" if v == "" else v for v in rec]
        rows.append(" ".join(vals))
    return rows


COMBINED_HEADER = """\
# The queries and checks of nexmark_source.slt, over Nexmark's combined event table instead of one stream per
# table: Flink's published DDL (one `datagen` table with event_type, a ROW per event type and the computed dateTime
# with its WATERMARK, then the person, auction and bid views over it: bench/nexmark/ddl_combined.sql) with the
# same generator options (4000 events, seed 2, 50 events per second from 2026-01-01 23:59:30), so the same events,
# and the same expected rows: those that Postgres 15 computed from the per-table streams (see
# nexmark_source.slt). The combined table's one watermark follows every event type, and all its events come in
# event-time order, so no row is late here either.
#
# GENERATED: do not edit by hand. Regenerate with
#   scripts/nexmark-reference/run_source.sh combined > tests/sqllogic/testdata/nexmark_source_combined.slt
"""


def main():
    combined = sys.argv[1:] == ["combined"]
    out = [COMBINED_HEADER if combined else HEADER]
    if combined:
        # the bench's combined DDL with this file's generator options in place of its event count
        text = open(os.path.join(ROOT, "bench", "nexmark", "ddl_combined.sql")).read()
        text = re.sub(r"^--.*\n", "", text, flags=re.M)
        bench_opts = "'events.num' = '${EVENTS}'"
        assert bench_opts in text
        text = text.replace(bench_opts, "'events.num' = '4000', 'seed' = '2',\n"
                            "    'first-event.rate' = '50', 'base-time' = '2026-01-01 23:59:30'")
    else:
        text = open(os.path.join(HERE, "source_ddl.sql")).read()
    ddl = text.strip().split("\n\n")
    out.append("# q13's side input, in the file's own PostgreSQL server.\nexternal postgres\n%s\n" % SIDE_INPUT)
    for stmt in ddl:
        out.append("statement ok\n%s\n" % stmt.strip().rstrip(";"))
    for q in QUERIES:
        out.append("statement ok\n%s\n" % query_text(q))
    out.append("# The sources are bounded: every view's job finishes.\nwait\n")
    for stmt in AFTER_WAIT:
        out.append("statement ok\n%s\n" % stmt)
    for s in parse_checks():
        out.append("# " + "\n# ".join(s["notes"]) if s["notes"] else "# " + s["name"])
        for c in s["checks"]:
            if c["notes"]:
                out.append("# " + "\n# ".join(c["notes"]))
            rows = postgres_rows(c["sql"], len(c["types"]))
            if c["sort"] == "rowsort":
                rows.sort()
            head = "query %s%s" % (c["types"], " " + c["sort"] if c["sort"] else "")
            out.append("%s\n%s\n----\n%s\n" % (head, c["sql"], "\n".join(rows)))
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
