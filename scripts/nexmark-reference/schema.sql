-- The Nexmark tables in Postgres (Flink nexmark ddl columns; unquoted names fold to lower case, so the engine's
-- `dateTime` is datetime here). Event times are TIMESTAMP(3) without time zone, as in the engine.
DROP TABLE IF EXISTS person, auction, bid CASCADE; -- and the views of source_queries.sql over them
CREATE TABLE person (id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR,
                     state VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR);
CREATE TABLE auction (id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,
                      dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR);
CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
                  dateTime TIMESTAMP(3), extra VARCHAR);
