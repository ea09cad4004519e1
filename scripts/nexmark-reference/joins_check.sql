-- Postgres check of the hand-derived expectations of tests/sqllogic/testdata/joins.slt (run by `run.sh suites`).
-- The same rows are loaded step by step; at each check point of the .slt the consolidated view is computed:
--   * interval joins: the matched pairs among the rows so far, plus (outer joins) the NULL-padded row of every
--     unmatched left row whose l.ts + 2 s (the upper bound) is below the watermark, and of every unmatched right
--     row whose r.ts + 1 s (r.ts minus the lower bound -1 s) is below it; the watermark is min over the two
--     streams of max(ts) (WATERMARK FOR ts AS ts), -infinity while a stream is empty;
--   * window joins: the join of the windows whose end is at or before the watermark (min over the streams of
--     max(ts) - 1 s);
--   * regular joins: the join over every row so far (an updating query's consolidated result).
-- Output: one block per check point ("-- <label>") with each view's rows in byte order, as rowsort compares.
\set QUIET on
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS joins_check CASCADE;
CREATE SCHEMA joins_check;
SET search_path = joins_check;
CREATE TABLE l (k INT, lv VARCHAR, ts TIMESTAMP(3));
CREATE TABLE r (k INT, rv VARCHAR, ts TIMESTAMP(3));
CREATE TABLE wa (k INT, v INT, ts TIMESTAMP(3));
CREATE TABLE wb (k INT, w INT, ts TIMESTAMP(3));
CREATE TABLE users (uid INT, name VARCHAR);
CREATE TABLE orders (oid INT, uid INT, amount INT);

CREATE FUNCTION ij_wm() RETURNS timestamp LANGUAGE sql AS $$
  SELECT CASE WHEN (SELECT count(*) FROM l) = 0 OR (SELECT count(*) FROM r) = 0 THEN '-infinity'::timestamp
              ELSE least((SELECT max(ts) FROM l), (SELECT max(ts) FROM r)) END $$;
CREATE FUNCTION wj_wm() RETURNS timestamp LANGUAGE sql AS $$
  SELECT CASE WHEN (SELECT count(*) FROM wa) = 0 OR (SELECT count(*) FROM wb) = 0 THEN '-infinity'::timestamp
              ELSE least((SELECT max(ts) FROM wa), (SELECT max(ts) FROM wb)) - INTERVAL '1' SECOND END $$;

-- interval join views (the matching condition, then the outer rows by the watermark rule)
CREATE VIEW ij_pairs AS
  SELECT l.lv, r.rv, l.ts AS lts, r.ts AS rts FROM l JOIN r
    ON l.k = r.k AND r.ts BETWEEN l.ts - INTERVAL '1' SECOND AND l.ts + INTERVAL '2' SECOND;
CREATE VIEW ij_lpad AS
  SELECT l.lv, NULL::varchar AS rv, l.ts AS lts, NULL::timestamp AS rts FROM l
  WHERE l.lv NOT IN (SELECT lv FROM ij_pairs) AND l.ts + INTERVAL '2' SECOND < ij_wm();
CREATE VIEW ij_rpad AS
  SELECT NULL::varchar AS lv, r.rv, NULL::timestamp AS lts, r.ts AS rts FROM r
  WHERE r.rv NOT IN (SELECT rv FROM ij_pairs) AND r.ts + INTERVAL '1' SECOND < ij_wm();
CREATE VIEW ij_inner AS SELECT * FROM ij_pairs;
CREATE VIEW ij_left AS SELECT * FROM ij_pairs UNION ALL SELECT * FROM ij_lpad;
CREATE VIEW ij_right AS SELECT * FROM ij_pairs UNION ALL SELECT * FROM ij_rpad;
CREATE VIEW ij_full AS SELECT * FROM ij_pairs UNION ALL SELECT * FROM ij_lpad UNION ALL SELECT * FROM ij_rpad;

-- window join views over the fired windows
CREATE VIEW twa AS SELECT wa.*, date_bin('10 seconds', ts, TIMESTAMP '1970-01-01') AS window_start,
  date_bin('10 seconds', ts, TIMESTAMP '1970-01-01') + INTERVAL '10' SECOND AS window_end FROM wa;
CREATE VIEW twb AS SELECT wb.*, date_bin('10 seconds', ts, TIMESTAMP '1970-01-01') AS window_start,
  date_bin('10 seconds', ts, TIMESTAMP '1970-01-01') + INTERVAL '10' SECOND AS window_end FROM wb;
CREATE VIEW fwa AS SELECT * FROM twa WHERE window_end <= wj_wm();
CREATE VIEW fwb AS SELECT * FROM twb WHERE window_end <= wj_wm();
CREATE VIEW wj_inner AS
  SELECT A.k, A.window_start, A.sv, A.na, B.sw
  FROM (SELECT k, window_start, window_end, SUM(v) AS sv, COUNT(*) AS na FROM fwa GROUP BY k, window_start, window_end) A
  JOIN (SELECT k, window_start, window_end, SUM(w) AS sw FROM fwb GROUP BY k, window_start, window_end) B
  ON A.k = B.k AND A.window_start = B.window_start AND A.window_end = B.window_end;
CREATE VIEW wj_left AS
  SELECT L.k, L.v, R.w, L.window_start
  FROM fwa L LEFT JOIN fwb R ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k;
CREATE VIEW wj_full AS
  SELECT L.k AS lk, L.v, R.k AS rk, R.w, COALESCE(L.window_start, R.window_start) AS window_start
  FROM fwa L FULL JOIN fwb R ON L.k = R.k AND L.window_start = R.window_start AND L.window_end = R.window_end;

-- regular join views: the queries of the .slt as they are
CREATE VIEW rj_inner AS SELECT o.oid, u.name, o.amount FROM orders o JOIN users u ON o.uid = u.uid;
CREATE VIEW rj_comma AS SELECT o.oid, u.name FROM orders o, users u WHERE o.uid = u.uid AND o.amount > 10;
CREATE VIEW rj_using AS SELECT uid, name, oid FROM orders JOIN users USING (uid);
CREATE VIEW rj_left AS SELECT u.name, o.oid, o.amount FROM users u LEFT JOIN orders o ON u.uid = o.uid;
CREATE VIEW rj_left_big AS SELECT u.name, o.oid FROM users u LEFT JOIN orders o ON u.uid = o.uid AND o.amount >= 50;
CREATE VIEW rj_right AS SELECT u.name, o.oid, o.amount FROM users u RIGHT JOIN orders o ON u.uid = o.uid;
CREATE VIEW rj_full AS SELECT u.uid AS u_uid, u.name, o.oid, o.uid AS o_uid FROM users u FULL JOIN orders o ON u.uid = o.uid;
CREATE VIEW rj_totals AS SELECT u.name, t.total, t.n FROM users u
  LEFT JOIN (SELECT uid, SUM(amount) AS total, COUNT(*) AS n FROM orders GROUP BY uid) t ON u.uid = t.uid;
CREATE VIEW rj_small AS SELECT u.name, t.total FROM users u
  JOIN (SELECT uid, SUM(amount) AS total FROM orders GROUP BY uid) t ON u.uid = t.uid WHERE t.total < 50;

\ir helpers.sql

-- ---------- interval joins ----------
INSERT INTO r VALUES (1, 'r1', '2026-01-01 00:00:01'), (2, 'r2', '2026-01-01 00:00:02');
INSERT INTO l VALUES (1, 'l1', '2026-01-01 00:00:02'), (3, 'l3', '2026-01-01 00:00:03');
SELECT show_sorted('interval check 1', 'ij_inner', 'ij_left', 'ij_right', 'ij_full');
INSERT INTO l VALUES (2, 'l2', '2026-01-01 00:00:04'), (4, 'l4', '2026-01-01 00:00:04.5');
INSERT INTO r VALUES (3, 'r3', '2026-01-01 00:00:05'), (2, 'r2b', '2026-01-01 00:00:05.5'), (4, 'r4', '2026-01-01 00:00:07');
SELECT show_sorted('interval check 2', 'ij_inner', 'ij_left', 'ij_right', 'ij_full');
INSERT INTO l VALUES (4, 'l4b', '2026-01-01 00:00:06.5'), (5, 'l5', '2026-01-01 00:00:08');
SELECT show_sorted('interval check 3', 'ij_inner', 'ij_left', 'ij_right', 'ij_full');
INSERT INTO r VALUES (5, 'r5', '2026-01-01 00:00:09.5'), (6, 'r6', '2026-01-01 00:00:10');
INSERT INTO l VALUES (6, 'l6', '2026-01-01 00:00:13');
SELECT show_sorted('interval check 4', 'ij_inner', 'ij_left', 'ij_right', 'ij_full');
INSERT INTO l VALUES (9, 'lz', '2026-01-01 00:01:40');
INSERT INTO r VALUES (9, 'rz', '2026-01-01 00:01:40');
-- the late left row (2, 'late', 00:00:05) is dropped by the engine: not loaded here
SELECT show_sorted('interval final', 'ij_inner', 'ij_left', 'ij_right', 'ij_full');

-- ---------- window joins ----------
INSERT INTO wb VALUES (1, 100, '2026-01-01 00:00:02'), (2, 200, '2026-01-01 00:00:04');
INSERT INTO wa VALUES (1, 1, '2026-01-01 00:00:01'), (1, 2, '2026-01-01 00:00:06'), (3, 3, '2026-01-01 00:00:08');
INSERT INTO wa VALUES (2, 4, '2026-01-01 00:00:11.5');
SELECT show_sorted('window check 1', 'wj_inner', 'wj_left', 'wj_full');
INSERT INTO wb VALUES (1, 101, '2026-01-01 00:00:09.5'), (3, 300, '2026-01-01 00:00:12'), (4, 400, '2026-01-01 00:00:13');
SELECT show_sorted('window check 2', 'wj_inner', 'wj_left', 'wj_full');
INSERT INTO wa VALUES (3, 5, '2026-01-01 00:00:14'), (4, 6, '2026-01-01 00:00:19.5'), (1, 7, '2026-01-01 00:00:21.5');
SELECT show_sorted('window check 3', 'wj_inner', 'wj_left', 'wj_full');
INSERT INTO wb VALUES (2, 201, '2026-01-01 00:00:15'), (5, 500, '2026-01-01 00:00:25');
SELECT show_sorted('window check 4', 'wj_inner', 'wj_left', 'wj_full');
INSERT INTO wa VALUES (9, 0, '2026-01-01 00:01:40');
INSERT INTO wb VALUES (9, 0, '2026-01-01 00:01:40');
SELECT show_sorted('window final', 'wj_inner', 'wj_left', 'wj_full');

-- ---------- regular joins ----------
INSERT INTO orders VALUES (10, 1, 30), (11, 2, 5), (12, NULL, 70);
SELECT show_sorted('regular check 0', 'rj_right', 'rj_full', 'rj_left');
INSERT INTO users VALUES (1, 'ann'), (3, 'cid');
SELECT show_sorted('regular check 1', 'rj_inner', 'rj_comma', 'rj_using', 'rj_left', 'rj_left_big', 'rj_right', 'rj_full', 'rj_totals', 'rj_small');
INSERT INTO orders VALUES (13, 3, 20), (14, 1, 45);
SELECT show_sorted('regular check 2', 'rj_inner', 'rj_comma', 'rj_using', 'rj_left', 'rj_left_big', 'rj_right', 'rj_full', 'rj_totals', 'rj_small');
INSERT INTO users VALUES (2, 'bob'), (4, 'dee');
SELECT show_sorted('regular check 3', 'rj_inner', 'rj_comma', 'rj_using', 'rj_left', 'rj_left_big', 'rj_right', 'rj_full', 'rj_totals', 'rj_small');
INSERT INTO orders VALUES (15, 4, 60), (16, 2, 8);
SELECT show_sorted('regular final', 'rj_inner', 'rj_comma', 'rj_using', 'rj_left', 'rj_left_big', 'rj_right', 'rj_full', 'rj_totals', 'rj_small');

DROP SCHEMA joins_check CASCADE;
