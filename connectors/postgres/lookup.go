package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/textform"
	"github.com/clinksql/clinksql/sqlerr"
)

// The lookup source: connector = 'postgres' in CREATE STREAM declares a table of a Postgres database that a lookup
// join reads by key (`JOIN dim FOR SYSTEM_TIME AS OF l.p AS d ON l.k = d.id`, p a PROCTIME() attribute); it is
// never scanned. Each lookup is one query for a batch's keys:
//
//	SELECT c1::text, ... FROM table WHERE k = ANY($1::text[]::<k's type>[])
//	SELECT c1::text, ... FROM table WHERE (k1, k2) IN (SELECT * FROM unnest($1::text[]::<t1>[], $2::text[]::<t2>[]))
//
// with the keys in their text forms, cast by Postgres to the columns' own types (so an index on them serves), and
// the values read back as text and cast to the stream's column types by the engine's own casts. Options (Flink
// JDBC's): 'url', 'table-name', 'username', 'password' as the sink's; 'lookup.cache.max-rows' (rows cached per
// subtask, a key the table does not hold counting as one; default 0: no cache), 'lookup.cache.ttl' (how long a
// cached key is used, e.g. '10 s'; default: until evicted), 'lookup.max-retries' (a failed query tried again,
// default 3). CREATE STREAM connects and checks the table and every stream column in it.

const (
	optCacheRows  = "lookup.cache.max-rows"
	optCacheTTL   = "lookup.cache.ttl"
	optMaxRetries = "lookup.max-retries"
)

func init() { connectors.RegisterSource(lookupConnector{}) }

type lookupConnector struct{}

var _ connectors.Lookup = lookupConnector{}

func (lookupConnector) Name() string { return "postgres" }

func (lookupConnector) Options() connectors.OptionNames {
	return connectors.OptionNames{Names: []string{optURL, optTable, optUser, optPassword, optCacheRows, optCacheTTL, optMaxRetries},
		Unsupported: []string{"driver", "lookup.cache", "lookup.partial-cache.max-rows", "lookup.partial-cache.expire-after-write",
			"lookup.partial-cache.expire-after-access", "lookup.cache.caching-missing-key", "scan.partition.column",
			"scan.partition.num", "scan.partition.lower-bound", "scan.partition.upper-bound", "scan.fetch-size"}}
}

// Capabilities: nothing a scan could use; the stream is read only by key.
func (lookupConnector) Capabilities(map[string]string) connectors.SourceCapabilities {
	return connectors.SourceCapabilities{}
}

// lookupOptions is a lookup stream's configuration.
type lookupOptions struct {
	Config
	plan connectors.LookupPlan // cache and retry settings
}

// lookupConfig reads a lookup stream's options; schema is the stream's columns.
func lookupConfig(schema *arrow.Schema, opts map[string]string) (lookupOptions, error) {
	lo := lookupOptions{plan: connectors.LookupPlan{MaxRetries: 3}}
	rest := map[string]string{}
	for k, v := range opts {
		switch k {
		case optCacheRows:
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 100_000_000 {
				return lo, connectors.OptionError(k, "postgres lookup: '%s' = '%s': want a number of rows from 0 to 100000000", k, v)
			}
			lo.plan.CacheRows = n
		case optCacheTTL:
			d, err := connectors.DurationOption(k, v, false)
			if err != nil {
				return lo, err
			}
			lo.plan.CacheTTL = d
		case optMaxRetries:
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 100 {
				return lo, connectors.OptionError(k, "postgres lookup: '%s' = '%s': want a number from 0 to 100", k, v)
			}
			lo.plan.MaxRetries = n
		case optMaxRows, optPrefix:
			return lo, connectors.OptionError(k, "'%s' is an option of a postgres sink, not of a stream (a lookup table)", k)
		default:
			rest[k] = v
		}
	}
	cfg, err := ConfigFromOptions(schema, nil, rest)
	if err != nil {
		return lo, err
	}
	lo.Config = cfg
	for _, f := range schema.Fields() {
		switch f.Type.ID() {
		case arrow.BOOL, arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128,
			arrow.STRING, arrow.DATE32:
		case arrow.TIMESTAMP:
			if !expr.IsTimestampTZ(f.Type) {
				break
			}
			fallthrough
		default:
			return lo, connectors.ColumnError(f.Name, "postgres lookup: column %s of type %s is not supported (BOOLEAN, integers, REAL, DOUBLE, DECIMAL, VARCHAR, DATE and TIMESTAMP are)", f.Name, f.Type)
		}
	}
	return lo, nil
}

// Validate reads the options and checks the table: every stream column is a column of it.
func (lookupConnector) Validate(spec connectors.Spec, opts map[string]string, env connectors.Env) error {
	lo, err := lookupConfig(spec.Schema, opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ValidateTimeout)
	defer cancel()
	conn, err := connect(ctx, lo.Config)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = columnTypes(ctx, conn, lo.Config)
	return err
}

// columnTypes returns the Postgres type (format_type) of every stream column in the table; a missing table or
// column is an error naming it.
func columnTypes(ctx context.Context, conn *pgx.Conn, cfg Config) (map[string]string, error) {
	rows, err := conn.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, cfg.Table.Quoted())
	if err != nil {
		return nil, queryError(cfg, "reading the table's columns", err)
	}
	types := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, queryError(cfg, "reading the table's columns", err)
		}
		types[name] = typ
	}
	if err := rows.Err(); err != nil {
		return nil, queryError(cfg, "reading the table's columns", err)
	}
	if len(types) == 0 {
		return nil, &connectors.ConfigError{Code: sqlerr.UndefinedTable, Option: optTable,
			Msg: fmt.Sprintf("postgres lookup: table %s does not exist at %s", cfg.Table, cfg.Where)}
	}
	for _, f := range cfg.Schema.Fields() {
		if _, ok := types[f.Name]; !ok {
			return nil, &connectors.ConfigError{Code: sqlerr.UndefinedColumn, Column: f.Name,
				Msg: fmt.Sprintf("postgres lookup: table %s at %s has no column %s", cfg.Table, cfg.Where, f.Name)}
		}
	}
	return types, nil
}

// Build refuses: the stream is a table read by key only.
func (lookupConnector) Build(spec connectors.Spec, _ map[string]string, _ connectors.Env) (connectors.SourcePlan, error) {
	return connectors.SourcePlan{}, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos,
		"stream %q (connector 'postgres') is a table of a Postgres database, read only by key: as the right side of a lookup join, JOIN %s FOR SYSTEM_TIME AS OF <a PROCTIME() column> ON ... = %s.<key>",
		spec.Object, spec.Object, spec.Object)
}

// BuildLookup makes the lookup table of the stream keyed on keys.
func (lookupConnector) BuildLookup(spec connectors.Spec, opts map[string]string, keys []int, env connectors.Env) (connectors.LookupPlan, error) {
	lo, err := lookupConfig(spec.Schema, opts)
	if err != nil {
		return connectors.LookupPlan{}, err
	}
	plan := lo.plan
	cfg := lo.Config
	plan.New = func(int) exec.LookupTable { return &pgLookup{cfg: cfg, keys: keys} }
	var names []string
	for _, k := range keys {
		names = append(names, spec.Schema.Field(k).Name)
	}
	cache := "cache: none (every batch queries its keys)"
	if plan.CacheRows > 0 {
		ttl := "until evicted"
		if plan.CacheTTL > 0 {
			ttl = plan.CacheTTL.String()
		}
		cache = fmt.Sprintf("cache: %d rows per subtask, LRU, ttl %s", plan.CacheRows, ttl)
	}
	plan.Details = []string{"lookup: table " + cfg.Table.String() + " at " + cfg.Where + " by (" + strings.Join(names, ", ") + "), one query per batch", cache}
	return plan, nil
}

// pgLookup is one subtask's lookup table: a connection (opened on first use, again after a failed query) and the
// query.
type pgLookup struct {
	cfg   Config
	keys  []int
	conn  *pgx.Conn
	query string
	casts []expr.Expr // text -> each column's type
	text  *arrow.Schema
}

func (l *pgLookup) open(ctx context.Context) error {
	conn, err := connect(ctx, l.cfg)
	if err != nil {
		return err
	}
	types, err := columnTypes(ctx, conn, l.cfg)
	if err != nil {
		conn.Close(context.Background())
		return err
	}
	var sel, keyCols, arrays []string
	var textFields []arrow.Field
	l.casts = l.casts[:0]
	for i, f := range l.cfg.Schema.Fields() {
		sel = append(sel, pgx.Identifier{f.Name}.Sanitize()+"::text")
		textFields = append(textFields, arrow.Field{Name: f.Name, Type: arrow.BinaryTypes.String, Nullable: true})
		c, err := expr.Cast(expr.Column(i, f.Name, arrow.BinaryTypes.String), f.Type)
		if err != nil {
			conn.Close(context.Background())
			return err
		}
		l.casts = append(l.casts, c)
	}
	for n, k := range l.keys {
		name := l.cfg.Schema.Field(k).Name
		keyCols = append(keyCols, pgx.Identifier{name}.Sanitize())
		arrays = append(arrays, fmt.Sprintf("$%d::text[]::%s[]", n+1, types[name]))
	}
	l.text = arrow.NewSchema(textFields, nil)
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + l.cfg.Table.Quoted() + " WHERE "
	if len(keyCols) == 1 {
		q += keyCols[0] + " = ANY(" + arrays[0] + ")"
	} else {
		q += "(" + strings.Join(keyCols, ", ") + ") IN (SELECT * FROM unnest(" + strings.Join(arrays, ", ") + "))"
	}
	l.conn, l.query = conn, q
	return nil
}

func (l *pgLookup) Lookup(ctx context.Context, alloc memory.Allocator, keys arrow.RecordBatch) (arrow.RecordBatch, error) {
	if l.conn == nil {
		if err := l.open(ctx); err != nil {
			return nil, err
		}
	}
	args := make([]any, len(l.keys))
	for c := range l.keys {
		col, err := textform.NewColumn(keys.Column(c))
		if err != nil {
			return nil, err
		}
		vals := make([]string, keys.NumRows())
		for i := range vals {
			vals[i] = string(col.Append(nil, i))
		}
		args[c] = vals
	}
	rec, err := l.query1(ctx, alloc, args)
	if err != nil {
		l.conn.Close(context.Background())
		l.conn = nil // connect again next time
		return nil, fmt.Errorf("postgres lookup in %s at %s: %w", l.cfg.Table, l.cfg.Where, err)
	}
	return rec, nil
}

// query1 runs the query and builds the stream's record from its text values.
func (l *pgLookup) query1(ctx context.Context, alloc memory.Allocator, args []any) (arrow.RecordBatch, error) {
	bs := make([]*array.StringBuilder, len(l.casts))
	for i := range bs {
		bs[i] = array.NewStringBuilder(alloc)
		defer bs[i].Release()
	}
	rows, err := l.conn.Query(ctx, l.query, args...)
	if err != nil {
		return nil, err
	}
	n := 0
	for rows.Next() {
		for i, v := range rows.RawValues() {
			if v == nil {
				bs[i].AppendNull()
			} else {
				bs[i].BinaryBuilder.Append(v)
			}
		}
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	text := make([]arrow.Array, len(bs))
	for i, b := range bs {
		text[i] = b.NewArray()
	}
	trec := array.NewRecordBatch(l.text, text, int64(n))
	for _, a := range text {
		a.Release()
	}
	defer trec.Release()
	ectx := &expr.Context{Alloc: alloc, Mode: expr.ErrorsFail}
	cols := make([]arrow.Array, len(l.casts))
	for i, c := range l.casts {
		a, err := c.Eval(ectx, trec)
		if err != nil {
			for _, d := range cols[:i] {
				d.Release()
			}
			return nil, err
		}
		cols[i] = a
	}
	out := array.NewRecordBatch(l.cfg.Schema, cols, int64(n))
	for _, a := range cols {
		a.Release()
	}
	return out, nil
}

func (l *pgLookup) Close() error {
	if l.conn != nil {
		err := l.conn.Close(context.Background())
		l.conn = nil
		return err
	}
	return nil
}
