package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors"
	_ "github.com/clinksql/clinksql/connectors/all" // every connector, registered by name
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// Connectors are looked up by name in the registry (package connectors; connectors/all links every one in). A
// catalog object's options are checked at CREATE (the names against the connector's, then its Validate, so a
// statement that says it worked can run) and built into a node for each job or SELECT that uses the object (which
// validates a source's files again, as they may have changed).

// sinkOptions are a sink's options as its connector sees them: without 'connector' and the upsert options, which
// are the planner's. (A stream's are dataOptions.)
func sinkOptions(opts map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range opts {
		switch k {
		case "connector", "type", "primary_key":
		default:
			out[k] = v
		}
	}
	return out
}

// connectorSpec is the catalog object as a connector sees it: its fields, with the metadata of the columns of
// the same name, and its primary key.
func connectorSpec(name string, schema *arrow.Schema, cols []catalog.Column, pk []string) connectors.Spec {
	spec := connectors.Spec{Object: name, Schema: schema, PrimaryKey: pk}
	for _, f := range schema.Fields() {
		c := connectors.Column{Name: f.Name, Type: f.Type}
		for _, cc := range cols {
			if cc.Name == f.Name {
				c.MetadataKey, c.Virtual = cc.MetadataKey, cc.Virtual
			}
		}
		spec.Columns = append(spec.Columns, c)
	}
	return spec
}

// connectorEnv is what a connector may use of env: path resolution and confinement, and the session's settings.
func connectorEnv(env Env, s Settings) connectors.Env {
	return connectors.Env{Path: env.Path, Confine: env.Confine, Restoring: s.Restoring, Parallelism: s.Parallelism,
		CheckpointInterval: s.CheckpointInterval}
}

// sourceConnector looks up a stream's connector; at gives the position of an error (the 'connector' option).
func sourceConnector(name string, pos int) (connectors.Source, error) {
	c, ok := connectors.LookupSource(name)
	if ok {
		return c, nil
	}
	if _, ok := connectors.LookupSink(name); ok {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, pos, "connector '%s' cannot be read; it is a sink connector (CREATE SINK)", name)
	}
	return nil, sqlerr.New(sqlerr.InvalidParameter, pos, "unknown connector '%s' (streams: %s, or none for a stream fed by INSERT)",
		name, strings.Join(connectors.SourceNames(), ", "))
}

// sinkConnector looks up a sink's connector.
func sinkConnector(name string, pos int) (connectors.Sink, error) {
	if c, ok := connectors.LookupSink(name); ok {
		return c, nil
	}
	return nil, sqlerr.New(sqlerr.InvalidParameter, pos, "unknown connector '%s' (sinks: %s)", name, strings.Join(connectors.SinkNames(), ", "))
}

// sourceIsChangelog reports whether a stream's connector yields updates and deletes (upsert-kafka,
// debezium-json): its readers are updating queries.
func sourceIsChangelog(obj *catalog.Object) bool {
	if obj.Kind != catalog.Stream || obj.Connector() == "" {
		return false
	}
	c, ok := connectors.LookupSource(obj.Connector())
	return ok && c.Capabilities(dataOptions(obj.Options)).Changelog
}

// sinkTakesChangelog reports whether target's connector takes an updating result as it is.
func sinkTakesChangelog(target *catalog.Object) bool {
	if target.Kind != catalog.Sink {
		return false
	}
	c, ok := connectors.LookupSink(target.Connector())
	if !ok {
		return false
	}
	// A connector that takes a PRIMARY KEY applies a changelog by it: only a sink that declares one takes it.
	caps := c.Capabilities(sinkOptions(target.Options))
	return caps.Changelog && (!caps.PrimaryKey || len(target.PrimaryKey) > 0)
}

// configError turns a connector's configuration error into the statement's: its SQLSTATE (never XX000: what a
// connector refuses is the user's to fix), at the position at gives for the option or column it names. prefix
// (such as `stream "s": `) starts the message of an error found outside the CREATE statement.
func configError(err error, prefix string, at func(option, column string) int) error {
	var ce *connectors.ConfigError
	if errors.As(err, &ce) {
		var se *sqlerr.Error
		if errors.As(ce.Err, &se) && se.Code == ce.Code {
			c := *se
			c.Msg, c.Pos = prefix+c.Msg, at(ce.Option, ce.Column)
			return &c
		}
		code := ce.Code
		if code == "" {
			code = sqlerr.InvalidParameter
		}
		return sqlerr.New(code, at(ce.Option, ce.Column), "%s%s", prefix, ce.Msg)
	}
	var se *sqlerr.Error
	if errors.As(err, &se) && se.Code != sqlerr.InternalError {
		return se.WithPos(at("", ""))
	}
	return sqlerr.New(sqlerr.InvalidParameter, at("", ""), "%s%v", prefix, err)
}

// definitionPos is configError's at for a CREATE statement: the option's key, the column's type, else the
// connector option.
func definitionPos(pos map[string]int, defs []parser.ColumnDef) func(option, column string) int {
	return func(option, column string) int {
		if column != "" {
			for _, d := range defs {
				if d.Name == column {
					return d.Type.P
				}
			}
		}
		if p, ok := pos[option]; ok && option != "" {
			return p
		}
		return pos["connector"]
	}
}

// noPos is configError's at for an object used by a later statement.
func noPos(string, string) int { return sqlerr.NoPos }

func objectPrefix(kind, name string) string { return fmt.Sprintf("%s %q: ", kind, name) }

// SingleReader is, for a stream whose connector allows one reader at a time, the option naming what it reads
// (SourceCapabilities.SingleReader: 'slot.name' for a replication slot): one live job may read it, and a query
// only once. "" for every other object.
func SingleReader(obj *catalog.Object) string {
	if obj == nil || obj.Kind != catalog.Stream || obj.Connector() == "" {
		return ""
	}
	c, ok := connectors.LookupSource(obj.Connector())
	if !ok {
		return ""
	}
	return c.Capabilities(dataOptions(obj.Options)).SingleReader
}

// ReleaseSource calls the connector of stream obj to release what its sources hold outside the engine
// (connectors.SourceReleaser). ok is false when the connector holds nothing (it does not implement it).
func ReleaseSource(ctx context.Context, env Env, obj *catalog.Object, what connectors.Releasing) (ok bool, err error) {
	if obj.Kind != catalog.Stream || obj.Connector() == "" {
		return false, nil
	}
	c, found := connectors.LookupSource(obj.Connector())
	r, releases := c.(connectors.SourceReleaser)
	if !found || !releases {
		return false, nil
	}
	fields := make([]arrow.Field, len(obj.Columns))
	for i, col := range obj.Columns {
		t, err := col.Type.Arrow()
		if err != nil {
			return true, err
		}
		fields[i] = arrow.Field{Name: col.Name, Type: t, Nullable: true}
	}
	spec := connectorSpec(obj.Name, arrow.NewSchema(fields, nil), obj.Columns, obj.PrimaryKey)
	return true, r.Release(ctx, spec, dataOptions(obj.Options), connectorEnv(env, Settings{}.norm()), what)
}
