package postgres

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec/textform"
)

// Option names (Flink JDBC's where it has one).
const (
	optURL      = "url"
	optTable    = "table-name"
	optUser     = "username"
	optPassword = "password"
	optMaxRows  = "sink.buffer-flush.max-rows"
	optPrefix   = "sink.transaction-id-prefix"
)

// DefaultMaxRows is how many rows a subtask gathers before it sends them (one COPY, or one upsert and one delete
// statement), when 'sink.buffer-flush.max-rows' is not given. A barrier sends what is gathered whatever its size.
const DefaultMaxRows = 50000

// maxGID is Postgres' limit on a prepared transaction's identifier (GIDSIZE 200, less the terminating zero).
const maxGID = 199

// Config is a Postgres sink's configuration, read from its WITH options and the sink's columns.
type Config struct {
	// Conn is the connection configuration: the URL with 'username' and 'password' applied.
	Conn *pgx.ConnConfig
	// Table is the target table, schema-qualified or not (then the connection's search_path finds it).
	Table  Table
	Schema *arrow.Schema
	// Key are the PRIMARY KEY columns (upsert); none for an append sink.
	Key []string
	// MaxRows is what a subtask gathers before it sends.
	MaxRows int
	// Prefix starts every prepared transaction's identifier: <prefix>-<job>-<operator>-<subtask>-<checkpoint>.
	Prefix string
	// Where is the server as messages name it (host:port/database), without credentials.
	Where string
}

// Table is a possibly schema-qualified table name, each part as Postgres stores it.
type Table struct{ Schema, Name string }

// Quoted is the name as SQL text.
func (t Table) Quoted() string {
	if t.Schema == "" {
		return pgx.Identifier{t.Name}.Sanitize()
	}
	return pgx.Identifier{t.Schema, t.Name}.Sanitize()
}

func (t Table) String() string {
	if t.Schema == "" {
		return t.Name
	}
	return t.Schema + "." + t.Name
}

// ParseTable reads 'table-name': name or schema.name; an unquoted part folds to lower case as Postgres folds it, a
// double-quoted one is kept as it is ("" for a quote inside).
func ParseTable(s string) (Table, error) {
	var parts []string
	for i := 0; ; {
		var part string
		if i < len(s) && s[i] == '"' {
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return Table{}, fmt.Errorf("unterminated quoted identifier in %q", s)
				}
				if s[j] == '"' {
					if j+1 < len(s) && s[j+1] == '"' {
						b.WriteByte('"')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			part, i = b.String(), j+1
		} else {
			j := strings.IndexByte(s[i:], '.')
			if j < 0 {
				j = len(s) - i
			}
			part, i = strings.ToLower(strings.TrimSpace(s[i:i+j])), i+j
		}
		if part == "" {
			return Table{}, fmt.Errorf("empty name in %q", s)
		}
		parts = append(parts, part)
		if i >= len(s) {
			break
		}
		if s[i] != '.' {
			return Table{}, fmt.Errorf("unexpected %q in %q", s[i:], s)
		}
		i++
	}
	switch len(parts) {
	case 1:
		return Table{Name: parts[0]}, nil
	case 2:
		return Table{Schema: parts[0], Name: parts[1]}, nil
	}
	return Table{}, fmt.Errorf("%q: want table or schema.table", s)
}

// ConfigFromOptions reads a sink's options (without 'connector', 'type' and 'primary_key'): schema is the sink's
// columns, key its primary key (none: append).
//
//	'url'                         postgres://user:password@host:port/database?sslmode=... (libpq's URL or key=value
//	                              form), or JDBC's jdbc:postgresql://host:port/database?user=...; required
//	'table-name'                  table or schema.table; required
//	'username', 'password'        override the URL's
//	'sink.buffer-flush.max-rows'  rows gathered before a send (default 50000)
//	'sink.transaction-id-prefix'  the prepared transactions' identifier prefix (default 'clink'): two clinksql
//	                              servers writing into one database need different ones
func ConfigFromOptions(schema *arrow.Schema, key []string, opts map[string]string) (Config, error) {
	cfg := Config{Schema: schema, Key: key, MaxRows: DefaultMaxRows, Prefix: "clink"}
	var url, user, password string
	var hasUser, hasPassword bool
	for k, v := range connectors.SortedOptions(opts) {
		switch k {
		case optURL:
			url = v
		case optTable:
			t, err := ParseTable(v)
			if err != nil {
				return cfg, connectors.OptionError(k, "postgres sink: '%s': %v", k, err)
			}
			cfg.Table = t
		case optUser:
			user, hasUser = opts[k], true
		case optPassword:
			password, hasPassword = opts[k], true
		case optMaxRows:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 10_000_000 {
				return cfg, connectors.OptionError(k, "postgres sink: '%s' = '%s': want a number of rows from 1 to 10000000", k, v)
			}
			cfg.MaxRows = n
		case optPrefix:
			if v == "" || len(v) > 64 || strings.ContainsFunc(v, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.')
			}) {
				return cfg, connectors.OptionError(k, "postgres sink: '%s' = '%s': want 1 to 64 letters, digits, '_' or '.'", k, v)
			}
			cfg.Prefix = v
		default:
			return cfg, connectors.OptionError(k, "unknown option '%s' for connector 'postgres'", k)
		}
	}
	if url == "" {
		return cfg, connectors.OptionError("", "connector 'postgres' needs 'url' = 'postgres://host:port/database'")
	}
	if cfg.Table.Name == "" {
		return cfg, connectors.OptionError("", "connector 'postgres' needs 'table-name'")
	}
	conn, err := ParseURL(url)
	if err != nil {
		return cfg, connectors.OptionError(optURL, "postgres sink: 'url': %v", err)
	}
	if hasUser {
		conn.User = user
	}
	if hasPassword {
		conn.Password = password
	}
	// TIMESTAMP values are UTC: a timestamptz column reads them so; dates in ISO order.
	conn.RuntimeParams["timezone"] = "UTC"
	conn.RuntimeParams["datestyle"] = "ISO, YMD"
	cfg.Conn = conn
	cfg.Where = fmt.Sprintf("%s:%d/%s", conn.Host, conn.Port, conn.Database)
	if schema == nil {
		return cfg, fmt.Errorf("postgres sink: no schema")
	}
	for _, f := range schema.Fields() {
		if err := textform.CheckType(f.Type); err != nil {
			return cfg, connectors.ColumnError(f.Name, "postgres sink: column %s: %v", f.Name, err)
		}
	}
	return cfg, nil
}

// ParseURL reads a libpq connection string (URL or key=value) or JDBC's jdbc:postgresql:// URL. JDBC's
// parameters other than user and password (ssl, currentSchema, ...) are not libpq's and are refused by the server.
func ParseURL(url string) (*pgx.ConnConfig, error) {
	if rest, ok := strings.CutPrefix(url, "jdbc:"); ok {
		url = rest
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, redact(err)
	}
	return cfg, nil
}

// redact keeps a password out of a parse error's text (pgconn's errors quote the connection string).
func redact(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "cannot parse `"); i >= 0 {
		if j := strings.Index(msg[i+14:], "`"); j >= 0 {
			msg = msg[:i] + "cannot parse the URL" + msg[i+14+j+1:]
		}
	}
	return fmt.Errorf("%s", msg)
}
