package postgrescdc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/sqlerr"
)

// tableInfo is what the source needs to know of the captured table.
type tableInfo struct {
	OID      uint32
	Identity byte // pg_class.relreplident: d default, f full, n nothing, i index
	Columns  []pgColumn
	// Key are the indexes into Columns of the replica identity's key (primary key for DEFAULT, the index for
	// USING INDEX; the primary key, if any, for FULL); empty for NOTHING.
	Key []int
}

// full reports whether old tuples carry the whole row (REPLICA IDENTITY FULL).
func (t tableInfo) full() bool { return t.Identity == 'f' }

func connect(ctx context.Context, cfg Config) (*pgx.Conn, error) {
	pc, err := cfg.pgConfig(false)
	if err != nil {
		return nil, err
	}
	cc, _ := pgx.ParseConfig("")
	cc.Config = *pc
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, &connectors.ConfigError{Code: sqlerr.ConnectionFailure, Option: OptHostname,
			Msg: fmt.Sprintf("postgres-cdc: cannot connect to %s:%d database %s: %v", cfg.Host, cfg.Port, cfg.Database, err), Err: err}
	}
	return conn, nil
}

// describeTable reads the table's columns (those pgoutput sends: not dropped, not generated, in attnum order),
// replica identity and key.
func describeTable(ctx context.Context, conn *pgx.Conn, cfg Config) (tableInfo, error) {
	var t tableInfo
	rows, err := conn.Query(ctx, `SELECT c.oid, c.relreplident::text, a.attname, a.atttypid, a.atttypmod,
		format_type(a.atttypid, a.atttypmod)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')
		AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		ORDER BY a.attnum`, cfg.Schema, cfg.Table)
	if err != nil {
		return t, fmt.Errorf("postgres-cdc: reading table %s.%s: %w", cfg.Schema, cfg.Table, err)
	}
	for rows.Next() {
		var c pgColumn
		var ident string
		if err := rows.Scan(&t.OID, &ident, &c.Name, &c.OID, &c.Typmod, &c.Type); err != nil {
			rows.Close()
			return t, err
		}
		t.Identity = ident[0]
		t.Columns = append(t.Columns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return t, fmt.Errorf("postgres-cdc: reading table %s.%s: %w", cfg.Schema, cfg.Table, err)
	}
	if len(t.Columns) == 0 {
		return t, &connectors.ConfigError{Code: sqlerr.UndefinedTable, Option: OptTable,
			Msg: fmt.Sprintf("postgres-cdc: table %s.%s does not exist in database %s", cfg.Schema, cfg.Table, cfg.Database)}
	}
	cond := "i.indisprimary"
	if t.Identity == 'i' {
		cond = "i.indisreplident"
	}
	if t.Identity != 'n' {
		krows, err := conn.Query(ctx, `SELECT a.attname FROM pg_index i
			JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
			WHERE i.indrelid = $1 AND `+cond+` ORDER BY k.ord`, t.OID)
		if err != nil {
			return t, err
		}
		for krows.Next() {
			var name string
			if err := krows.Scan(&name); err != nil {
				krows.Close()
				return t, err
			}
			t.Key = append(t.Key, slices.IndexFunc(t.Columns, func(c pgColumn) bool { return c.Name == name }))
		}
		krows.Close()
		if err := krows.Err(); err != nil {
			return t, err
		}
	}
	return t, nil
}

// checkTable refuses, at CREATE and at every start, a server or table the source cannot read correctly: wal_level
// not logical, a replica identity that cannot give the old row (NOTHING, DEFAULT without a primary key), a stream
// column the table lacks (42703) or cannot carry exactly (42804), a declared PRIMARY KEY that is not the table's.
func checkTable(ctx context.Context, conn *pgx.Conn, cfg Config, spec connectors.Spec) (tableInfo, []int, error) {
	var wal string
	if err := conn.QueryRow(ctx, "SHOW wal_level").Scan(&wal); err != nil {
		return tableInfo{}, nil, fmt.Errorf("postgres-cdc: SHOW wal_level: %w", err)
	}
	if wal != "logical" {
		return tableInfo{}, nil, &connectors.ConfigError{Code: sqlerr.InvalidJobState, Option: OptHostname,
			Msg: fmt.Sprintf("postgres-cdc: the server's wal_level is %q, logical decoding needs 'logical' "+
				"(ALTER SYSTEM SET wal_level = logical, then restart PostgreSQL)", wal)}
	}
	t, err := describeTable(ctx, conn, cfg)
	if err != nil {
		return t, nil, err
	}
	fix := fmt.Sprintf("ALTER TABLE %s REPLICA IDENTITY FULL", cfg.QualifiedTable())
	switch {
	case t.Identity == 'n':
		return t, nil, &connectors.ConfigError{Code: sqlerr.InvalidJobState, Option: OptTable,
			Msg: fmt.Sprintf("postgres-cdc: table %s.%s has REPLICA IDENTITY NOTHING: its updates and deletes carry no old row, "+
				"so they cannot be retracted; run %s (or give it a primary key and REPLICA IDENTITY DEFAULT)", cfg.Schema, cfg.Table, fix)}
	case (t.Identity == 'd' || t.Identity == 'i') && (len(t.Key) == 0 || slices.Contains(t.Key, -1)):
		return t, nil, &connectors.ConfigError{Code: sqlerr.InvalidJobState, Option: OptTable,
			Msg: fmt.Sprintf("postgres-cdc: table %s.%s has REPLICA IDENTITY DEFAULT and no primary key: its updates and "+
				"deletes carry no old row, so they cannot be retracted; run %s or add a primary key", cfg.Schema, cfg.Table, fix)}
	}
	colIdx := make([]int, len(spec.Columns))
	for i, sc := range spec.Columns {
		if sc.MetadataKey != "" {
			return t, nil, connectors.ColumnError(sc.Name, "postgres-cdc: metadata columns are not supported")
		}
		j := slices.IndexFunc(t.Columns, func(c pgColumn) bool { return c.Name == sc.Name })
		if j < 0 {
			return t, nil, &connectors.ConfigError{Code: sqlerr.UndefinedColumn, Column: sc.Name,
				Msg: fmt.Sprintf("postgres-cdc: table %s.%s has no column %q", cfg.Schema, cfg.Table, sc.Name)}
		}
		if why := checkColumn(t.Columns[j], spec.Schema.Field(i).Type); why != "" {
			return t, nil, connectors.ColumnError(sc.Name, "postgres-cdc: column %s: %s", sc.Name, why)
		}
		colIdx[i] = j
	}
	if len(spec.PrimaryKey) > 0 {
		var key []string
		for _, k := range t.Key {
			key = append(key, t.Columns[k].Name)
		}
		if !slices.Equal(spec.PrimaryKey, key) {
			return t, nil, connectors.OptionError("", "postgres-cdc: the stream's PRIMARY KEY (%s) is not the table's key (%s)",
				strings.Join(spec.PrimaryKey, ", "), strings.Join(key, ", "))
		}
	}
	return t, colIdx, nil
}
