package postgrescdc

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clinksql/clinksql/connectors"
)

// Option names (Flink CDC's postgres-cdc names, plus publication.name and sslmode).
const (
	OptHostname    = "hostname"
	OptPort        = "port"
	OptUsername    = "username"
	OptPassword    = "password"
	OptDatabase    = "database-name"
	OptSchema      = "schema-name"
	OptTable       = "table-name"
	OptSlot        = "slot.name"
	OptPlugin      = "decoding.plugin.name"
	OptStartup     = "scan.startup.mode"
	OptPublication = "publication.name"
	OptSSLMode     = "sslmode"
)

// Startup modes.
const (
	StartupInitial = "initial"
	StartupLatest  = "latest-offset"
)

var optionNames = []string{OptHostname, OptPort, OptUsername, OptPassword, OptDatabase, OptSchema, OptTable,
	OptSlot, OptPlugin, OptStartup, OptPublication, OptSSLMode}

// Flink CDC options we know and do not support: refused as such, not as misspelt.
var unsupportedOptions = []string{"scan.incremental.snapshot.enabled", "scan.incremental.snapshot.chunk.size",
	"changelog-mode", "heartbeat.interval.ms", "scan.snapshot.fetch.size", "connect.timeout", "connect.max-retries",
	"connection.pool.size", "slot.drop.on.stop", "scan.lsn-commit.checkpoints-num-delay"}

// identRe is what slot and publication names may be: Postgres' slot names are lower-case letters, digits and
// underscores; we hold publications to the same so both go into commands unquoted.
var identRe = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// Config is a postgres-cdc source's options, checked.
type Config struct {
	Host, User, Password, Database string
	Port                           int
	Schema, Table                  string
	Slot, Publication              string
	// PublicationDerived is set when publication.name was not given: the source creates it (FOR TABLE) if missing.
	PublicationDerived bool
	Startup            string
	SSLMode            string
}

// ParseConfig reads and checks the options (without 'connector').
func ParseConfig(opts map[string]string) (Config, error) {
	c := Config{Host: opts[OptHostname], User: opts[OptUsername], Password: opts[OptPassword],
		Database: opts[OptDatabase], Schema: opts[OptSchema], Table: opts[OptTable], Slot: opts[OptSlot],
		Publication: opts[OptPublication], Startup: opts[OptStartup], SSLMode: opts[OptSSLMode], Port: 5432}
	for _, req := range []string{OptHostname, OptUsername, OptDatabase, OptTable, OptSlot} {
		if opts[req] == "" {
			return c, connectors.OptionError("", "connector 'postgres-cdc' needs the '%s' option", req)
		}
	}
	if v := opts[OptPort]; v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			return c, connectors.OptionError(OptPort, "'%s' must be a port number (1..65535), got %q", OptPort, v)
		}
		c.Port = p
	}
	if c.Schema == "" {
		c.Schema = "public"
	}
	if !identRe.MatchString(c.Slot) {
		return c, connectors.OptionError(OptSlot, "'%s' %q: a replication slot name is 1 to 63 lower-case letters, digits or underscores", OptSlot, c.Slot)
	}
	if c.Publication == "" {
		c.Publication = c.Slot + "_pub"
		c.PublicationDerived = true
	} else if !identRe.MatchString(c.Publication) {
		return c, connectors.OptionError(OptPublication, "'%s' %q: use 1 to 63 lower-case letters, digits or underscores", OptPublication, c.Publication)
	}
	if p := opts[OptPlugin]; p != "" && p != "pgoutput" {
		return c, connectors.OptionError(OptPlugin, "'%s' %q is not supported: only 'pgoutput' (built into PostgreSQL 10 and later)", OptPlugin, p)
	}
	switch c.Startup {
	case "":
		c.Startup = StartupInitial
	case StartupInitial, StartupLatest:
	default:
		return c, connectors.OptionError(OptStartup, "'%s' %q: use 'initial' or 'latest-offset'", OptStartup, c.Startup)
	}
	switch c.SSLMode {
	case "":
		c.SSLMode = "prefer"
	case "disable", "allow", "prefer", "require", "verify-ca", "verify-full":
	default:
		return c, connectors.OptionError(OptSSLMode, "'%s' %q: use disable, allow, prefer, require, verify-ca or verify-full", OptSSLMode, c.SSLMode)
	}
	return c, nil
}

// QualifiedTable is "schema"."table", quoted.
func (c Config) QualifiedTable() string {
	return quoteIdent(c.Schema) + "." + quoteIdent(c.Table)
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteLiteral(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// pgConfig is the connection configuration; replication adds replication=database (a walsender that speaks the
// replication protocol and SQL). Text forms are fixed so the decoders see one format: ISO dates, UTC, shortest
// exact floats.
func (c Config) pgConfig(replication bool) (*pgconn.Config, error) {
	kv := func(k, v string) string { return k + "=" + quoteLiteral(v) + " " }
	dsn := kv("host", c.Host) + kv("port", strconv.Itoa(c.Port)) + kv("user", c.User) + kv("dbname", c.Database) +
		kv("sslmode", c.SSLMode) + kv("connect_timeout", "10")
	if c.Password != "" {
		dsn += kv("password", c.Password)
	}
	if replication {
		dsn += kv("replication", "database")
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres-cdc: connection options: %w", err)
	}
	for k, v := range map[string]string{"DateStyle": "ISO, YMD", "TimeZone": "UTC", "extra_float_digits": "3",
		"IntervalStyle": "postgres", "client_encoding": "UTF8", "application_name": "clinksql-cdc-" + c.Slot} {
		cfg.RuntimeParams[k] = v
	}
	return cfg, nil
}

// Describe is the node's EXPLAIN details.
func (c Config) Describe() []string {
	return []string{fmt.Sprintf("table: %s.%s at %s:%d/%s", c.Schema, c.Table, c.Host, c.Port, c.Database),
		"slot: " + c.Slot + ", publication: " + c.Publication, "startup: " + c.Startup,
		"changelog: +I, -U/+U, -D; the slot is confirmed only when a checkpoint completes"}
}
