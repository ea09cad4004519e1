// Package pgwire will own the Postgres wire protocol server on jackc/pgx/v5/pgproto3: startup, simple and extended
// query protocol, type OIDs and formats, errors with SQLSTATE and position, cancel. Not built yet (the front-door
// issue). Its read loop must never block on statement execution.
package pgwire
