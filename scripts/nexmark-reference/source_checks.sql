-- The checks of tests/sqllogic/testdata/nexmark_source.slt: each runs unchanged in the engine (against the
-- materialized view qN) and in Postgres (against the translated view qN of source_queries.sql); build_source_slt.py
-- puts the Postgres rows into the .slt as the expected result.
--
-- Format: `-- ## qN` starts a query's section; the `-- ` lines right after it are its comment in the .slt;
-- `-- check <types> [rowsort]` starts a check, whose SQL runs to the line ending in `;`.
--
-- Large results are checked by aggregates that a wrong, missing or extra row would change: COUNT(*), sums of the
-- columns, row hashes MOD(a * 7919 + b * 104729 + c, 1000003) that tie a row's values together, time and string
-- columns weighted by another column of the row (MOD(price, 1009) * EXTRACT(EPOCH FROM dateTime),
-- LENGTH(extra) * MOD(price, 101)), MIN/MAX; plus a few exact rows (ORDER BY a unique key, LIMIT).

-- ## streams
-- The generated streams themselves: the expected values come from the engine's own export, loaded into Postgres,
-- so this only checks that a bounded SELECT and the rows every view below reads are the same.
-- check IRRRRDD
SELECT COUNT(*), SUM(id), SUM(MOD(id * 7919 + LENGTH(name) * 104729 + LENGTH(city), 1000003)),
  SUM(MOD(id, 1009) * EXTRACT(EPOCH FROM dateTime)), SUM(LENGTH(extra) * MOD(id, 101)), MIN(dateTime), MAX(dateTime)
FROM person;

-- check IRRRRRRDD
SELECT COUNT(*), SUM(id), SUM(MOD(id * 7919 + seller * 104729 + initialBid + reserve + category, 1000003)),
  SUM(MOD(id, 1009) * EXTRACT(EPOCH FROM dateTime)), SUM(MOD(id, 1013) * EXTRACT(EPOCH FROM expires)),
  SUM(LENGTH(extra) * MOD(id, 101)), SUM(LENGTH(itemName) * 1009 + LENGTH(description)), MIN(dateTime), MAX(expires)
FROM auction;

-- check IRRRRDD
SELECT COUNT(*), SUM(price), SUM(MOD(auction * 7919 + bidder * 104729 + price, 1000003)),
  SUM(MOD(price, 1009) * EXTRACT(EPOCH FROM dateTime)), SUM(LENGTH(extra) * MOD(price, 101)), MIN(dateTime),
  MAX(dateTime)
FROM bid;

-- ## q0
-- q0 (pass-through): every bid.
-- check IRRRRDDRR
SELECT COUNT(*), SUM(auction), SUM(bidder), SUM(price), SUM(MOD(auction * 7919 + bidder * 104729 + price, 1000003)),
  MIN(dateTime), MAX(dateTime), SUM(MOD(price, 1009) * EXTRACT(EPOCH FROM dateTime)),
  SUM(LENGTH(extra) * MOD(price, 101))
FROM q0;

-- check IIIDT
SELECT * FROM q0 ORDER BY dateTime LIMIT 3;

-- check IIID
SELECT auction, bidder, price, dateTime FROM q0 ORDER BY price DESC, dateTime LIMIT 3;

-- ## q1
-- q1 (projection): 0.908 * price is NUMERIC with 3 decimal places.
-- check IRRRRRR
SELECT COUNT(*), SUM(price), MIN(price), MAX(price), SUM(MOD(auction * 7919 + bidder * 104729, 1000003) * price),
  SUM(MOD(auction + bidder, 1009) * EXTRACT(EPOCH FROM dateTime)), SUM(LENGTH(extra) * MOD(auction + bidder, 101))
FROM q1;

-- check IIRD
SELECT auction, bidder, price, dateTime FROM q1 ORDER BY dateTime LIMIT 5;

-- ## q2
-- q2 (filter): bids of auctions whose id is a multiple of 123.
-- check II rowsort
SELECT * FROM q2;

-- ## q3
-- q3 (regular inner join + filter): category-10 auctions of sellers in OR, ID or CA.
-- check TTTI rowsort
SELECT * FROM q3;

-- ## q4
-- q4 (regular join with a BETWEEN over both sides, MAX per auction, then AVG per category): AVG of BIGINT has
-- 16 decimal places.
-- check IR rowsort
SELECT * FROM q4;

-- ## q5
-- q5 (HOP 2 s / 10 s, twice, joined on the window): per window, the auctions with the most bids (ties all kept);
-- without the window columns an auction repeats, so the check is the multiset of (auction, num).
-- check III rowsort
SELECT auction, num, COUNT(*) FROM q5 GROUP BY auction, num;

-- ## q6
-- q6 (adapted, see bench/nexmark/q6.sql: each auction's best bid per 10 s window, then AVG over the seller's last
-- 11 such rows by window_end): a seller's rows with the same window_end are ordered arbitrarily (Flink too takes
-- them in arrival order), which changes the averages of that seller's following rows. So every seller's row count
-- is checked, and the averages exactly for the sellers that have no such ties.
-- check II rowsort
SELECT seller, COUNT(*) FROM q6 GROUP BY seller;

-- check IRI rowsort
SELECT seller, avg_price, COUNT(*) FROM q6
WHERE seller NOT IN (SELECT seller FROM nexmark_q6_final GROUP BY seller, window_end HAVING COUNT(*) > 1)
GROUP BY seller, avg_price;

-- ## q7
-- q7 (bids joined with the max price of each 10 s window, dateTime within [end - 10 s, end]).
-- check IIIDT rowsort
SELECT * FROM q7;

-- ## q8
-- q8 (window join of two TUMBLE 10 s aggregates): persons who registered and created an auction in the same
-- window.
-- check ITD rowsort
SELECT * FROM q8;

-- ## q9
-- q9 (Top-1 per auction over a regular join): the winning bid of each auction among its bids within
-- [dateTime, expires], price DESC then dateTime ASC.
-- check IRRRRRRRDDRR
SELECT COUNT(*), SUM(id), SUM(MOD(id * 7919 + bidder * 104729 + price, 1000003)), SUM(price),
  SUM(initialBid + reserve), SUM(MOD(seller * 7919 + category, 1009)), SUM(auction - id),
  SUM(LENGTH(itemName) * 1009 + LENGTH(description) + LENGTH(extra) * MOD(id, 101) + LENGTH(bid_extra) * MOD(price, 97)),
  MIN(bid_dateTime), MAX(bid_dateTime), SUM(MOD(price, 1009) * EXTRACT(EPOCH FROM bid_dateTime)),
  SUM(MOD(id, 1009) * (EXTRACT(EPOCH FROM dateTime) + EXTRACT(EPOCH FROM expires)))
FROM q9;

-- check IIIIDDDII
SELECT id, auction, bidder, price, bid_dateTime, dateTime, expires, seller, category FROM q9
ORDER BY price DESC, id LIMIT 5;

-- ## q10
-- q10 (a CSV sink partitioned by day and minute, each partition committed with a _SUCCESS file): the files of both
-- partitions hold every bid once, each partition its minute's bids; both partitions are committed (the end of the
-- bounded input moves the watermark past them): the streams over their _SUCCESS files could be created above.
-- check IRRRRDD
SELECT COUNT(*), SUM(price), SUM(MOD(auction * 7919 + bidder * 104729 + price, 1000003)),
  SUM(MOD(price, 1009) * EXTRACT(EPOCH FROM dateTime)), SUM(LENGTH(extra) * MOD(price, 101)), MIN(dateTime),
  MAX(dateTime)
FROM q10_all;

-- check IRRDD
SELECT COUNT(*), SUM(MOD(auction * 7919 + bidder * 104729 + price, 1000003)),
  SUM(LENGTH(extra) * MOD(price, 101)), MIN(dateTime), MAX(dateTime)
FROM q10_2359;

-- check IRRDD
SELECT COUNT(*), SUM(MOD(auction * 7919 + bidder * 104729 + price, 1000003)),
  SUM(LENGTH(extra) * MOD(price, 101)), MIN(dateTime), MAX(dateTime)
FROM q10_0000;

-- ## q11
-- q11 (legacy GROUP BY SESSION per bidder, gap 10 s): a session closes after 10 s without a bid; two bids exactly
-- 10 s apart are in one session (the windows [t, t + 10 s) touch and merge, as in Flink).
-- check IRRRRDD
SELECT COUNT(*), SUM(bid_count), SUM(bidder * bid_count), SUM(MOD(bidder, 97) * EXTRACT(EPOCH FROM starttime)),
  SUM(MOD(bidder + bid_count, 89) * EXTRACT(EPOCH FROM endtime)), MIN(starttime), MAX(endtime)
FROM q11;

-- check IIDD
SELECT * FROM q11 ORDER BY bid_count DESC, bidder, starttime LIMIT 5;

-- Bidders 1000, 1030 and 1049 each have two consecutive bids exactly 10 s apart (one session), and 1030 and 1049
-- also gaps of more than 10 s (new sessions).
-- check IIDD
SELECT * FROM q11 WHERE bidder IN (1000, 1030, 1049) ORDER BY bidder, starttime;

-- ## q12
-- q12 (a processing-time TUMBLE of 10 s per bidder, on the test clock set to 2026-01-02 12:00:03 before the view
-- started and never moved): every bid is in one window, which fires at the end of input.
-- check IRRRDD
SELECT COUNT(*), SUM(bid_count), SUM(MOD(bidder * 7919 + bid_count * 104729, 1000003)), MAX(bid_count),
  MIN(starttime), MAX(endtime)
FROM q12;

-- check II
SELECT bidder, bid_count FROM q12 ORDER BY bid_count DESC, bidder LIMIT 5;

-- ## q13
-- q13 (a lookup join of every bid, at its processing time, with the PostgreSQL side input keyed by
-- mod(auction, 10000)): every bid finds its row, the value names the key.
-- check IRRRR
SELECT COUNT(*), SUM(price), SUM(MOD(auction * 7919 + bidder * 104729 + price, 1000003)),
  SUM(MOD(price, 1009) * EXTRACT(EPOCH FROM dateTime)), SUM(LENGTH(value) * MOD(auction, 101))
FROM q13;

-- check ITTI
SELECT COUNT(DISTINCT auction), MIN(value), MAX(value), SUM(CASE WHEN value = 'side-' || CAST(MOD(auction, 10000) AS VARCHAR) THEN 1 ELSE 0 END)
FROM q13;

-- ## q14
-- q14 (projection with a user-defined function, filter on 0.908 * price): count_char(extra, 'c') is a wasm function
-- in the engine, a SQL function in Postgres. Every bid of the data is between 23:59:30 and 00:00:50, so
-- bidTimeType is 'nightTime' throughout.
-- check IRRRRRRIT
SELECT COUNT(*), SUM(price), MIN(price), MAX(price), SUM(c_counts), SUM(c_counts * MOD(auction + bidder, 101)),
  SUM(MOD(auction * 7919 + bidder * 104729 + c_counts, 1000003) * price), COUNT(DISTINCT bidTimeType),
  MIN(bidTimeType)
FROM q14;

-- check IIRTDI
SELECT auction, bidder, price, bidTimeType, dateTime, c_counts FROM q14 ORDER BY dateTime LIMIT 5;

-- The function over every bid, and over text of several characters (only the first counts) and none.
-- check IIII
SELECT COUNT(*), SUM(count_char(extra, 'c')), SUM(count_char(extra, 'xyz') * MOD(price, 7)),
  SUM(count_char(extra, ''))
FROM bid;

-- ## q15
-- q15 (GROUP BY DATE_FORMAT(dateTime, 'yyyy-MM-dd'), COUNT(DISTINCT) with FILTER): the data crosses midnight.
-- check TIIIIIIIIIIII rowsort
SELECT * FROM q15;

-- ## q16
-- q16 (per channel and day, max(DATE_FORMAT(dateTime, 'HH:mm')), COUNT(DISTINCT) with FILTER).
-- check IRRRRRRRRRRRRRIII
SELECT COUNT(*), SUM(total_bids), SUM(rank1_bids), SUM(rank2_bids), SUM(rank3_bids), SUM(total_bidders),
  SUM(rank1_bidders), SUM(rank2_bidders), SUM(rank3_bidders), SUM(total_auctions), SUM(rank1_auctions),
  SUM(rank2_auctions), SUM(rank3_auctions), SUM(LENGTH(channel) * total_bids * total_auctions), COUNT(DISTINCT channel),
  COUNT(*) FILTER (WHERE minute = '23:59'), COUNT(*) FILTER (WHERE day = '2026-01-02')
FROM q16;

-- check TTTIIIIIIIIIIII
SELECT * FROM q16 WHERE channel NOT LIKE 'channel-%' ORDER BY channel, day;

-- check TTTIIIIIIIIIIII
SELECT * FROM q16 ORDER BY total_bids DESC, channel, day LIMIT 3;

-- ## q17
-- q17 (per auction and day: counts with FILTER, MIN, MAX, AVG (16 decimal places), SUM).
-- check IRRRRRRRRRI
SELECT COUNT(*), SUM(total_bids), SUM(rank1_bids), SUM(rank2_bids), SUM(rank3_bids), SUM(min_price),
  SUM(max_price), SUM(avg_price), SUM(sum_price), SUM(MOD(auction * 7919 + total_bids * 104729 + min_price, 1000003)),
  COUNT(*) FILTER (WHERE day = '2026-01-02')
FROM q17;

-- check ITIIIIIIRR
SELECT * FROM q17 ORDER BY total_bids DESC, auction, day LIMIT 5;

-- ## q18
-- q18 (Top-1 per (bidder, auction) by dateTime DESC): each bidder's last bid on each auction.
-- check IRRRRDDRRR
SELECT COUNT(*), SUM(auction), SUM(price), SUM(MOD(auction * 7919 + bidder * 104729 + price, 1000003)),
  SUM(MOD(auction * bidder, 1009) * LENGTH(channel) + LENGTH(url)), MIN(dateTime), MAX(dateTime),
  SUM(MOD(price, 1009) * EXTRACT(EPOCH FROM dateTime)), SUM(LENGTH(extra) * MOD(price, 101)), COUNT(DISTINCT url)
FROM q18;

-- check IIITD
SELECT auction, bidder, price, channel, dateTime FROM q18 ORDER BY dateTime LIMIT 5;

-- ## q19
-- q19 (Top-10 per auction by price DESC, with the row number). Auction 1178 has two bids of price 417 at ranks 5
-- and 6 (other bidders, times, channels): which one is 5 is not defined, so no check ties rank_number to anything
-- but auction and price.
-- check IRRRRRDDRR
SELECT COUNT(*), SUM(rank_number), SUM(MOD(auction * 7919 + bidder * 104729 + price, 1000003)),
  SUM(rank_number * MOD(auction * 7919 + price, 1000003)), SUM(price), SUM(LENGTH(url)),
  MIN(dateTime), MAX(dateTime), SUM(MOD(price, 1009) * EXTRACT(EPOCH FROM dateTime)),
  SUM(LENGTH(extra) * MOD(price, 101))
FROM q19;

-- check IIITDI
SELECT auction, bidder, price, channel, dateTime, rank_number FROM q19
WHERE rank_number <= 2 ORDER BY auction, rank_number LIMIT 6;

-- ## q20
-- q20 (regular inner join bid x auction, category 10). The select list has dateTime and extra twice, which a
-- view (as a Postgres table) cannot have; the view takes the column names of the published sink instead.
-- check IRRRRRDDRRR
SELECT COUNT(*), SUM(auction), SUM(MOD(auction * 7919 + bidder * 104729 + price, 1000003)), SUM(price),
  SUM(initialBid + reserve + seller + category), SUM(LENGTH(itemName) * 1009 + LENGTH(description) + LENGTH(url)),
  MIN(bid_dateTime), MAX(expires),
  SUM(MOD(price, 1009) * EXTRACT(EPOCH FROM bid_dateTime) + MOD(bidder, 1013) * EXTRACT(EPOCH FROM auction_dateTime)),
  SUM(LENGTH(bid_extra) * MOD(price, 101) + LENGTH(auction_extra) * MOD(bidder, 103)), COUNT(DISTINCT auction)
FROM q20;

-- check IIITDDDII
SELECT auction, bidder, price, channel, bid_dateTime, auction_dateTime, expires, seller, category FROM q20
ORDER BY bid_dateTime LIMIT 5;

-- ## q21
-- q21 (CASE over lower(channel), REGEXP_EXTRACT of the url's channel_id, filter).
-- check IRRRRI
SELECT COUNT(*), SUM(MOD(auction * 7919 + bidder * 104729 + price, 1000003)), SUM(LENGTH(channel_id)),
  SUM(MOD(CAST(channel_id AS BIGINT), 1000003) * MOD(price, 101)), SUM(LENGTH(channel) * MOD(price, 97)),
  COUNT(DISTINCT channel_id)
FROM q21;

-- check TI rowsort
SELECT channel_id, COUNT(*) FROM q21 WHERE LENGTH(channel_id) = 1 GROUP BY channel_id;

-- check IIITT
SELECT * FROM q21 WHERE channel LIKE 'channel-%' ORDER BY price DESC, auction, bidder LIMIT 3;

-- ## q22
-- q22 (SPLIT_INDEX(url, '/', 3 | 4 | 5): 0-based, the three directories of the url).
-- check IRRRRRII
SELECT COUNT(*), SUM(MOD(auction * 7919 + bidder * 104729 + price, 1000003)),
  SUM(LENGTH(dir1) * MOD(price, 101)), SUM(LENGTH(dir2) * MOD(price, 103)), SUM(LENGTH(dir3) * MOD(price, 107)),
  SUM(LENGTH(channel) * MOD(price, 97)), COUNT(DISTINCT dir1 || '/' || dir2 || '/' || dir3), COUNT(DISTINCT channel)
FROM q22;

-- check IIITTTT
SELECT * FROM q22 ORDER BY price DESC, auction, bidder LIMIT 3;
