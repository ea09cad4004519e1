CREATE STREAM bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
  dateTime TIMESTAMP(3), extra VARCHAR, WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
  WITH (connector = 'nexmark', 'nexmark.table.type' = 'bid', 'events.num' = '${EVENTS}');
