-- uses: bid
-- Flink's published text (nexmark-flink q13.sql), the sink a blackhole: a lookup join of every bid, at its
-- processing time, with a side input keyed by mod(auction, 10000). In Flink the side input is a bounded file
-- table; here it is a PostgreSQL table read by key (connector = 'postgres', one query per batch for the keys the
-- cache does not hold): nexmark-bench creates nexmark_side_input (key 0..9999, value 'side-<key>') in the server of
-- ${PG_URL} ($NEXMARK_PG_URL, or a Postgres it starts) and skips q13 when there is none.
CREATE SINK nexmark_q13 (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3), `value` VARCHAR)
  WITH (connector = 'blackhole');
CREATE STREAM side_input (key BIGINT, `value` VARCHAR) WITH (connector = 'postgres', url = '${PG_URL}',
  'table-name' = 'nexmark_side_input', 'lookup.cache.max-rows' = '10000', 'lookup.cache.ttl' = '1 min');
CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;
INSERT INTO nexmark_q13
SELECT
    B.auction,
    B.bidder,
    B.price,
    B.dateTime,
    S.`value`
FROM B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time as S
ON mod(B.auction, 10000) = S.key;
