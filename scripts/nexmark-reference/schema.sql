-- The Nexmark tables in Postgres (Flink nexmark ddl columns; unquoted names fold to lower case, so the engine's
-- `dateTime` is datetime here). Event times are TIMESTAMP(3) without time zone, as in the engine.
DROP TABLE IF EXISTS person, auction, bid;
CREATE TABLE person (id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR,
                     state VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR);
CREATE TABLE auction (id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,
                      dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR);
CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
                  dateTime TIMESTAMP(3), extra VARCHAR);
-- q14's UDF (Flink's CountChar, a wasm function in the engine): the occurrences of c's first character in s.
CREATE OR REPLACE FUNCTION count_char(s TEXT, c TEXT) RETURNS BIGINT LANGUAGE SQL IMMUTABLE STRICT
  RETURN length(s) - length(replace(s, left(c, 1), ''));
