CREATE STREAM auction (id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,
  dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
  WITH (connector = 'nexmark', 'nexmark.table.type' = 'auction', 'events.num' = '${EVENTS}');
