CREATE STREAM person (id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR,
  state VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR, WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
  WITH (connector = 'nexmark', 'nexmark.table.type' = 'person', 'events.num' = '${EVENTS}');
