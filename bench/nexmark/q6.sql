-- uses: auction bid
-- Flink's q6 (the average selling price of each seller's last 10 closed auctions: AVG(final) OVER (PARTITION BY
-- seller ORDER BY dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)) reads an updating GROUP BY, which an OVER
-- window cannot follow (Flink refuses it too, and its text groups by neither dateTime nor anything it orders by).
-- Here the rows are final ones: each auction's best bid per 10 seconds of bidding, over the bids placed while it
-- was open (an interval join on the auction's first 20 seconds, as Nexmark auctions close within a second of
-- event time, plus its expiry), so every row carries its window_end as a time attribute, and the OVER window
-- averages the seller's last 11 of them, as q6 averages the last 11 closed auctions. (nexmark_q6_final is a view of
-- its own so that the tests can name it.)
CREATE SINK nexmark_q6 (seller BIGINT, avg_price DECIMAL(38,16)) WITH (connector = 'blackhole');
CREATE VIEW nexmark_q6_bids AS
SELECT A.id, A.seller, B.price, B.dateTime
FROM auction AS A JOIN bid AS B
  ON A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL '20' SECOND
  AND B.dateTime <= A.expires;
CREATE VIEW nexmark_q6_final AS
SELECT MAX(price) AS final, seller, window_start, window_end
FROM TABLE(TUMBLE(TABLE nexmark_q6_bids, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY id, seller, window_start, window_end;
INSERT INTO nexmark_q6
SELECT
    Q.seller,
    AVG(Q.final) OVER
        (PARTITION BY Q.seller ORDER BY Q.window_end ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
FROM nexmark_q6_final AS Q;
