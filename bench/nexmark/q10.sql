-- uses: bid
-- Flink's q10 (bids written to minute partitions of a filesystem sink, each committed with a _SUCCESS file once the
-- watermark is a minute past it) with the engine's spelling of the sink: CREATE SINK ... PARTITIONED BY (Flink's
-- CREATE TABLE ... PARTITIONED BY), connector 'file' (Flink's 'filesystem'), the path under the data directory.
-- Flink's 'sink.rolling-policy.*' options are left out: files roll at every checkpoint.
CREATE SINK nexmark_q10 (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3), extra VARCHAR,
  dt VARCHAR, hm VARCHAR)
  PARTITIONED BY (dt, hm)
  WITH (connector = 'file', path = 'out/q10', format = 'csv',
        'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 min',
        'sink.partition-commit.policy.kind' = 'success-file',
        'partition.time-extractor.timestamp-pattern' = '$dt $hm:00');
INSERT INTO nexmark_q10
SELECT auction, bidder, price, dateTime, extra, DATE_FORMAT(dateTime, 'yyyy-MM-dd'), DATE_FORMAT(dateTime, 'HH:mm')
FROM bid;
