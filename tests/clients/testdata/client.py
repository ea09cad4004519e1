"""psycopg2 against clinksql serve: the scenario of scenario_test.go, checked in Python's types.

Usage: client.py HOST PORT. Prints what it checked and exits 0, or prints every mismatch and exits 1.
psycopg2 binds %s parameters on the client (it quotes each value and sends the query by the simple protocol) and
runs statements inside BEGIN ... COMMIT unless autocommit is on: both paths are exercised.
"""
import datetime
import decimal
import sys

import psycopg2

host, port = sys.argv[1], int(sys.argv[2])
failures = []


def check(what, got, want):
    if got != want:
        failures.append("%s: got %r, want %r" % (what, got, want))


conn = psycopg2.connect(host=host, port=port, user="clinksql", dbname="clinksql", connect_timeout=10)
cur = conn.cursor()

cur.execute(
    "CREATE STREAM clicks (user_id BIGINT, url VARCHAR, amount DECIMAL(10,2), ts TIMESTAMP(3), "
    "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)"
)
check("CREATE STREAM status", cur.statusmessage, "CREATE STREAM")
cur.execute(
    "CREATE MATERIALIZED VIEW per_url AS SELECT url, window_start, window_end, COUNT(*) AS n, "
    "SUM(amount) AS total, MAX(ts) AS last_ts, MAX(user_id) AS top_user "
    "FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY url, window_start, window_end"
)
check("CREATE MATERIALIZED VIEW status", cur.statusmessage, "CREATE MATERIALIZED VIEW")
check("CREATE MATERIALIZED VIEW has no result set", cur.description, None)
check("the job id comes as a notice", [n.startswith("NOTICE:  started job job-") for n in conn.notices], [True])
conn.commit()

D = decimal.Decimal
T = datetime.datetime
rows = [
    (1, "a", D("1.50"), T(2026, 1, 1, 0, 0, 1)),
    (2, "b", D("2.25"), T(2026, 1, 1, 0, 0, 3)),
    (1, "a", D("3.00"), T(2026, 1, 1, 0, 0, 7, 250000)),
    (3, "a", D("0.75"), T(2026, 1, 1, 0, 0, 12)),
    (2, "b", D("10.00"), T(2026, 1, 1, 0, 0, 15)),
    (1, "c", D("5.00"), T(2026, 1, 1, 0, 0, 35)),
]
# The first row alone (its status checked), the rest through executemany.
cur.execute("INSERT INTO clicks VALUES (%s, %s, %s, %s)", rows[0])
check("INSERT status", cur.statusmessage, "INSERT 0 1")
check("INSERT rowcount", cur.rowcount, 1)
cur.executemany("INSERT INTO clicks VALUES (%s, %s, %s, %s)", rows[1:])
conn.commit()

# FLUSH and the SELECT in autocommit mode (no BEGIN around them).
conn.autocommit = True
cur.execute("FLUSH")
check("FLUSH status", cur.statusmessage, "FLUSH")

cur.execute("SELECT url, window_start, window_end, n, total, last_ts, top_user FROM per_url ORDER BY window_start, url")
check("column names", [d.name for d in cur.description],
      ["url", "window_start", "window_end", "n", "total", "last_ts", "top_user"])
# type_code is the column's type OID: varchar, timestamp, timestamp, int8, numeric, timestamp, int8.
check("column type OIDs", [d.type_code for d in cur.description], [1043, 1114, 1114, 20, 1700, 1114, 20])
got = cur.fetchall()
check("SELECT status", cur.statusmessage, "SELECT 4")

# Derived by hand (scenario_test.go): the watermark (00:00:34) fired [00:00, 00:10) and [00:10, 00:20).
want = [
    ("a", T(2026, 1, 1, 0, 0, 0), T(2026, 1, 1, 0, 0, 10), 2, D("4.50"), T(2026, 1, 1, 0, 0, 7, 250000), 1),
    ("b", T(2026, 1, 1, 0, 0, 0), T(2026, 1, 1, 0, 0, 10), 1, D("2.25"), T(2026, 1, 1, 0, 0, 3), 2),
    ("a", T(2026, 1, 1, 0, 0, 10), T(2026, 1, 1, 0, 0, 20), 1, D("0.75"), T(2026, 1, 1, 0, 0, 12), 3),
    ("b", T(2026, 1, 1, 0, 0, 10), T(2026, 1, 1, 0, 0, 20), 1, D("10.00"), T(2026, 1, 1, 0, 0, 15), 2),
]
check("row count", len(got), len(want))
types = [str, T, T, int, D, T, int]
for i, (g, w) in enumerate(zip(got, want)):
    check("row %d" % i, g, w)
    check("row %d types" % i, [type(v).__name__ for v in g], [t.__name__ for t in types])
    # Decimal equality ignores the scale: the text form must keep it (4.50, not 4.5).
    check("row %d total text" % i, str(g[4]), str(w[4]))
    for j in (1, 2, 5):
        check("row %d column %d is naive (timestamp without time zone)" % (i, j), g[j].tzinfo, None)

# An error carries its SQLSTATE; the connection stays usable.
try:
    cur.execute("SELECT nope FROM per_url")
    failures.append("SELECT nope: no error")
except psycopg2.Error as e:
    check("SELECT nope pgcode", e.pgcode, "42703")
cur.execute("SELECT 1")
check("SELECT 1 after an error", cur.fetchall(), [(1,)])

conn.close()
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("psycopg2 %s: %d rows checked" % (psycopg2.__version__, len(got)))
