package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/sqlerr"
)

// tableInfo is what the sink needs to know of its target table.
type tableInfo struct {
	// Types are the sink's columns' types in the table as SQL text (format_type: "numeric(20,4)"), index for
	// index with the sink's columns: the upsert's DELETE casts its keys' text to them.
	Types []string
	// Unmodified are the same types without their modifiers ("numeric"; "bpchar" and "varbit" for character(n) and
	// bit(n), since "character" and "bit" alone mean length 1): the upsert's INSERT casts its text to them, the
	// column's modifier then applied as an INSERT applies it (an explicit cast to varchar(n) would cut a longer
	// string to n characters where an INSERT refuses it).
	Unmodified []string
	// Bases are their base types (pg_type.typname, a domain's base type's): the binary forms COPY sends.
	Bases []string
}

// compatible lists, for each Arrow type a sink column may have, the Postgres base types its text form goes into.
func compatible(t arrow.DataType) []string {
	switch t.ID() {
	case arrow.BOOL:
		return []string{"bool"}
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32:
		return []string{"int2", "int4", "int8", "numeric"}
	case arrow.UINT64:
		return []string{"int8", "numeric"}
	case arrow.FLOAT32, arrow.FLOAT64:
		return []string{"float4", "float8", "numeric"}
	case arrow.DECIMAL128:
		return []string{"numeric"}
	case arrow.STRING, arrow.LARGE_STRING:
		return []string{"text", "varchar", "bpchar", "json", "jsonb", "uuid"}
	case arrow.DATE32, arrow.DATE64:
		return []string{"date", "timestamp", "timestamptz"}
	case arrow.TIMESTAMP:
		return []string{"timestamp", "timestamptz"}
	case arrow.DURATION, arrow.INTERVAL_MONTH_DAY_NANO:
		return []string{"interval"}
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		return []string{"bytea"}
	}
	return nil
}

// connectError is a server that did not let the sink in: its SQLSTATE when it answered (28P01 a wrong password,
// 3D000 no such database), 08001 when it could not be reached, at the 'url' option.
func connectError(cfg Config, err error) error {
	code := "08001" // sqlclient_unable_to_establish_sqlconnection
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		code = pe.Code
	}
	return &connectors.ConfigError{Code: code, Option: optURL,
		Msg: fmt.Sprintf("postgres sink: cannot connect to %s: %v", cfg.Where, err), Err: err}
}

// queryError is a catalog query that failed, with the server's SQLSTATE.
func queryError(cfg Config, what string, err error) error {
	code := sqlerr.IOError
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		code = pe.Code
	}
	return &connectors.ConfigError{Code: code, Option: optURL, Msg: fmt.Sprintf("postgres sink: %s on %s: %v", what, cfg.Where, err), Err: err}
}

// connect opens a connection with cfg.
func connect(ctx context.Context, cfg Config) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, cfg.Conn.Copy())
	if err != nil {
		return nil, connectError(cfg, err)
	}
	return c, nil
}

// describe checks what no job of the sink could run without: prepared transactions enabled on the server, the
// table, each sink column in it with a compatible type, no other column that must be given a value, and for an
// upsert sink a unique index on exactly its key.
func describe(ctx context.Context, c *pgx.Conn, cfg Config) (*tableInfo, error) {
	var mpt int
	if err := c.QueryRow(ctx, `SELECT current_setting('max_prepared_transactions')::int`).Scan(&mpt); err != nil {
		return nil, queryError(cfg, "reading max_prepared_transactions", err)
	}
	if mpt <= 0 {
		return nil, &connectors.ConfigError{Code: sqlerr.InvalidJobState, Option: optURL, Msg: fmt.Sprintf(
			"postgres sink: the server at %s has max_prepared_transactions = 0, and the sink's exactly-once commit "+
				"is Postgres' two-phase commit (PREPARE TRANSACTION): set max_prepared_transactions in postgresql.conf "+
				"(or ALTER SYSTEM SET max_prepared_transactions = 20) to at least twice the sinks' parallelism and "+
				"restart the server", cfg.Where)}
	}
	var oid *uint32
	var kind *string
	err := c.QueryRow(ctx, `SELECT c.oid, c.relkind::text FROM pg_class c WHERE c.oid = to_regclass($1)`, cfg.Table.Quoted()).Scan(&oid, &kind)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && oid == nil {
		return nil, &connectors.ConfigError{Code: sqlerr.UndefinedTable, Option: optTable,
			Msg: fmt.Sprintf("postgres sink: table %s does not exist in %s", cfg.Table.Quoted(), cfg.Where)}
	}
	if err != nil {
		return nil, queryError(cfg, "looking up table "+cfg.Table.Quoted(), err)
	}
	if *kind != "r" && *kind != "p" {
		return nil, &connectors.ConfigError{Code: sqlerr.WrongObjectType, Option: optTable,
			Msg: fmt.Sprintf("postgres sink: %s in %s is not a table", cfg.Table.Quoted(), cfg.Where)}
	}
	rows, err := c.Query(ctx, `SELECT a.attname, coalesce(b.typname, t.typname), format_type(a.atttypid, a.atttypmod), format_type(a.atttypid, NULL),
			a.attnotnull AND NOT a.atthasdef AND a.attidentity = '' AND a.attgenerated = ''
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_type b ON b.oid = t.typbasetype AND t.typtype = 'd'
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, *oid)
	if err != nil {
		return nil, queryError(cfg, "reading the columns of "+cfg.Table.Quoted(), err)
	}
	type column struct {
		base, typ, unmodified string
		required              bool
	}
	cols := map[string]column{}
	var order []string
	for rows.Next() {
		var name string
		var col column
		if err := rows.Scan(&name, &col.base, &col.typ, &col.unmodified, &col.required); err != nil {
			rows.Close()
			return nil, queryError(cfg, "reading the columns of "+cfg.Table.Quoted(), err)
		}
		cols[name] = col
		order = append(order, name)
	}
	if err := rows.Err(); err != nil {
		return nil, queryError(cfg, "reading the columns of "+cfg.Table.Quoted(), err)
	}
	info := &tableInfo{}
	names := map[string]bool{}
	for _, f := range cfg.Schema.Fields() {
		names[f.Name] = true
		col, ok := cols[f.Name]
		if !ok {
			return nil, &connectors.ConfigError{Code: sqlerr.UndefinedColumn, Column: f.Name, Msg: fmt.Sprintf(
				"postgres sink: table %s has no column %s (it has %s)", cfg.Table.Quoted(), pgx.Identifier{f.Name}.Sanitize(), strings.Join(order, ", "))}
		}
		if want := compatible(f.Type); !slices.Contains(want, col.base) {
			return nil, connectors.ColumnError(f.Name, "postgres sink: column %s is %s in table %s, which a %s column cannot be written into (want %s)",
				f.Name, col.typ, cfg.Table.Quoted(), catalog.TypeOf(f.Type), strings.Join(want, ", "))
		}
		info.Types = append(info.Types, col.typ)
		switch col.unmodified { // without a modifier these two mean length 1: cast to the unlimited types instead
		case "character":
			col.unmodified = "bpchar"
		case "bit":
			col.unmodified = "varbit"
		}
		info.Unmodified = append(info.Unmodified, col.unmodified)
		info.Bases = append(info.Bases, col.base)
	}
	for _, name := range order {
		if !names[name] && cols[name].required {
			return nil, &connectors.ConfigError{Code: sqlerr.DatatypeMismatch, Option: optTable, Msg: fmt.Sprintf(
				"postgres sink: column %s of table %s is NOT NULL without a default, and the sink does not write it", name, cfg.Table.Quoted())}
		}
	}
	if len(cfg.Key) == 0 {
		return info, nil
	}
	krows, err := c.Query(ctx, `SELECT array_agg(a.attname::text ORDER BY a.attname)
		FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1 AND i.indisunique AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL
		GROUP BY i.indexrelid`, *oid)
	if err != nil {
		return nil, queryError(cfg, "reading the unique indexes of "+cfg.Table.Quoted(), err)
	}
	key := slices.Sorted(slices.Values(cfg.Key))
	found := false
	for krows.Next() {
		var idx []string
		if err := krows.Scan(&idx); err != nil {
			krows.Close()
			return nil, queryError(cfg, "reading the unique indexes of "+cfg.Table.Quoted(), err)
		}
		found = found || slices.Equal(idx, key)
	}
	if err := krows.Err(); err != nil {
		return nil, queryError(cfg, "reading the unique indexes of "+cfg.Table.Quoted(), err)
	}
	if !found {
		return nil, &connectors.ConfigError{Code: sqlerr.InvalidColumnReference, Option: optTable, Msg: fmt.Sprintf(
			"postgres sink: table %s has no primary key or unique index on exactly (%s), the sink's PRIMARY KEY: "+
				"an upsert's INSERT ... ON CONFLICT needs one (ALTER TABLE %s ADD PRIMARY KEY (%s))",
			cfg.Table.Quoted(), strings.Join(cfg.Key, ", "), cfg.Table.Quoted(), strings.Join(cfg.Key, ", "))}
	}
	return info, nil
}
