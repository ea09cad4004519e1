-- uses: bid
-- Flink's published text (nexmark-flink q12.sql), the sink a blackhole: processing-time windows of 10 seconds over
-- a view that adds PROCTIME(). The windows are those of the wall clock when each bid reaches the window operator,
-- so the output depends on the machine and the run: the bench reports throughput only, and no output is compared.
-- At the end of input every open window fires.
CREATE SINK nexmark_q12 (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3))
  WITH (connector = 'blackhole');
CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;
INSERT INTO nexmark_q12
SELECT
    bidder,
    count(*) as bid_count,
    window_start AS starttime,
    window_end AS endtime
FROM TABLE(
        TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
