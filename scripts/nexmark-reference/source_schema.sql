-- The three Nexmark streams of source_ddl.sql as Postgres tables (run_source.sh fills them from the engine's
-- own export of the bounded streams).
DROP TABLE IF EXISTS person, auction, bid CASCADE;
CREATE TABLE person (id BIGINT, name TEXT, emailAddress TEXT, creditCard TEXT, city TEXT, state TEXT,
  dateTime TIMESTAMP(3), extra TEXT);
CREATE TABLE auction (id BIGINT, itemName TEXT, description TEXT, initialBid BIGINT, reserve BIGINT,
  dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra TEXT);
CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, dateTime TIMESTAMP(3),
  extra TEXT);
