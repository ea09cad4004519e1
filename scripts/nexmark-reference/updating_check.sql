-- Postgres check of the hand-derived expectations of tests/sqllogic/testdata/updating.slt (run by
-- `run.sh suites`). Every view there is an updating query without windows, so its consolidated state after a
-- FLUSH is the same query over every row inserted so far: the rows are loaded batch by batch and each view's
-- query (as in the .slt; AVG rounded to the engine's 16 places) is run at each check point.
\set QUIET on
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS updating_check CASCADE;
CREATE SCHEMA updating_check;
SET search_path = updating_check;
\ir helpers.sql

CREATE TABLE sales (shop VARCHAR, item VARCHAR, qty INT);

CREATE VIEW u_agg AS SELECT shop, COUNT(*) AS n, SUM(qty) AS total, round(AVG(qty::numeric(60,30)), 16) AS avg_qty,
  MIN(qty) AS lo, MAX(qty) AS hi, COUNT(DISTINCT item) AS items FROM sales GROUP BY shop;
CREATE VIEW u_having AS SELECT shop, SUM(qty) AS total FROM sales GROUP BY shop HAVING SUM(qty) > 10;
CREATE VIEW u_global AS SELECT COUNT(*) AS n, SUM(qty) AS total, COUNT(DISTINCT shop) AS shops FROM sales
  HAVING COUNT(*) > 0;  -- (the engine's view has no row before the first input row; not checked before one)
CREATE VIEW u_distinct AS SELECT DISTINCT shop, item FROM sales;
CREATE VIEW u_minmax AS SELECT MAX(total) AS top, MIN(total) AS bottom, COUNT(*) AS shops
  FROM (SELECT shop, SUM(qty) AS total FROM sales GROUP BY shop) t;
CREATE VIEW u_avgmax AS SELECT round(AVG(hi::numeric(60,30)), 16) AS avg_hi
  FROM (SELECT shop, MAX(qty) AS hi FROM sales GROUP BY shop) t;
CREATE VIEW u_size AS SELECT CASE WHEN total >= 5 THEN 'big' ELSE 'small' END AS size, COUNT(*) AS shops
  FROM (SELECT shop, SUM(qty) AS total FROM sales GROUP BY shop) t
  GROUP BY CASE WHEN total >= 5 THEN 'big' ELSE 'small' END;
CREATE VIEW u_top3 AS SELECT * FROM (SELECT shop, item, qty,
  ROW_NUMBER() OVER (PARTITION BY shop ORDER BY qty DESC) AS rn FROM sales) t WHERE rn <= 3;
CREATE VIEW u_top1 AS SELECT shop, item, total FROM (SELECT shop, item, total,
  ROW_NUMBER() OVER (PARTITION BY shop ORDER BY total DESC) AS rn
  FROM (SELECT shop, item, SUM(qty) AS total FROM sales GROUP BY shop, item) g) t WHERE rn = 1;
CREATE VIEW per_shop AS SELECT shop, SUM(qty) AS total FROM sales GROUP BY shop;
CREATE VIEW spread AS SELECT MAX(total) - MIN(total) AS spread, COUNT(*) AS shops FROM per_shop;
-- ties check: in every partition, the ORDER BY values of the first 4 rows (Top-3) and first 2 (Top-1) differ
CREATE VIEW ties AS
  SELECT 'top3 ' || shop AS tie FROM (SELECT shop, qty, ROW_NUMBER() OVER (PARTITION BY shop ORDER BY qty DESC) rn
    FROM sales) t WHERE rn <= 4 GROUP BY shop, qty HAVING COUNT(*) > 1
  UNION ALL
  SELECT 'top1 ' || shop FROM (SELECT shop, total, ROW_NUMBER() OVER (PARTITION BY shop ORDER BY total DESC) rn
    FROM (SELECT shop, item, SUM(qty) AS total FROM sales GROUP BY shop, item) g) t
    WHERE rn <= 2 GROUP BY shop, total HAVING COUNT(*) > 1;

\set views '''u_agg'', ''u_having'', ''u_global'', ''u_distinct'', ''u_minmax'', ''u_avgmax'', ''u_size'', ''u_top3'', ''u_top1'', ''per_shop'', ''spread'', ''ties'''

INSERT INTO sales VALUES ('a', 'x', 5), ('a', 'y', 3), ('b', 'x', 10);
INSERT INTO sales VALUES ('a', 'x', 7), ('c', 'z', 1), ('b', 'y', -4);
SELECT show_sorted('check 1', :views);
INSERT INTO sales VALUES ('a', 'z', 20), ('b', 'x', 2), ('c', 'z', 4);
SELECT show_sorted('check 2', :views);
INSERT INTO sales VALUES ('a', 'y', -30), ('b', 'z', 6), ('c', 'w', 9);
SELECT show_sorted('check 3', :views);
INSERT INTO sales VALUES ('d', 'x', 9), ('a', 'w', 8), ('a', 'z', -15), ('c', 'z', -5);
SELECT show_sorted('final', :views);

DROP SCHEMA updating_check CASCADE;
