CREATE STREAM person (id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR,
  state VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR, WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
  WITH (connector = 'nexmark', 'nexmark.table.type' = 'person', 'events.num' = '4000', 'seed' = '2',
        'first-event.rate' = '50', 'base-time' = '2026-01-01 23:59:30');

CREATE STREAM auction (id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,
  dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
  WITH (connector = 'nexmark', 'nexmark.table.type' = 'auction', 'events.num' = '4000', 'seed' = '2',
        'first-event.rate' = '50', 'base-time' = '2026-01-01 23:59:30');

CREATE STREAM bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
  dateTime TIMESTAMP(3), extra VARCHAR, WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
  WITH (connector = 'nexmark', 'nexmark.table.type' = 'bid', 'events.num' = '4000', 'seed' = '2',
        'first-event.rate' = '50', 'base-time' = '2026-01-01 23:59:30');
