-- uses: bid
-- count_char is Flink's CountChar UDF (the number of times the first character of c occurs in s) as a
-- WebAssembly function: exec/wasm/testdata/countchar, which the bench builds into ${WASM_DIR} (GOOS=wasip1
-- GOARCH=wasm go build -buildmode=c-shared) and allows with --allow-path. Unlike Flink's, it is strict: a NULL
-- extra gives NULL, not 0 (the generator never makes one).
CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS BIGINT LANGUAGE wasm AS '${WASM_DIR}/count_char.wasm';
CREATE SINK nexmark_q14 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), bidTimeType VARCHAR,
  dateTime TIMESTAMP(3), extra VARCHAR, c_counts BIGINT)
  WITH (connector = 'blackhole');
INSERT INTO nexmark_q14
SELECT
    auction,
    bidder,
    0.908 * price as price,
    CASE
        WHEN HOUR(dateTime) >= 8 AND HOUR(dateTime) <= 18 THEN 'dayTime'
        WHEN HOUR(dateTime) <= 6 OR HOUR(dateTime) >= 20 THEN 'nightTime'
        ELSE 'otherTime'
    END AS bidTimeType,
    dateTime,
    extra,
    count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
