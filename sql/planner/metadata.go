package planner

import (
	"slices"
	"strings"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// Metadata columns and primary keys of CREATE STREAM and CREATE SINK: a connector declares the metadata keys
// its records have and whether it takes a primary key (connectors.SourceCapabilities, SinkCapabilities); every
// other connector refuses them at the declaration.

// definitionCapabilities are the metadata keys and primary key use of a stream's (sink false) or sink's
// connector ("" for an internal stream, and nothing for a connector the registry does not know: its lookup
// refuses it after).
func definitionCapabilities(sink bool, connector string, opts map[string]string) ([]connectors.MetadataKey, bool) {
	if sink {
		if c, ok := connectors.LookupSink(connector); ok {
			caps := c.Capabilities(sinkOptions(opts))
			return caps.Metadata, caps.PrimaryKey
		}
		return nil, false
	}
	if c, ok := connectors.LookupSource(connector); ok {
		caps := c.Capabilities(dataOptions(opts))
		return caps.Metadata, caps.PrimaryKey
	}
	return nil, false
}

// definitionExtras checks the metadata columns and the primary key of a stream (sink false) or sink definition
// whose connector is connector ("" for an internal stream), fills the columns' metadata in cols (index for index
// with defs) and returns the primary key's columns.
func definitionExtras(sink bool, opts map[string]string, defs []parser.ColumnDef, pk *parser.PrimaryKey, cols []catalog.Column) ([]string, error) {
	connector := opts["connector"]
	keys, takesPK := definitionCapabilities(sink, connector, opts)
	for i, d := range defs {
		m := d.Metadata
		if m == nil {
			continue
		}
		if keys == nil {
			if connector == "" {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, m.P, "column %q: a stream without a connector has no metadata columns", d.Name)
			}
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, m.P, "column %q: connector '%s' has no metadata columns", d.Name, connector)
		}
		name := m.Key
		if name == "" {
			name = d.Name
		}
		j := slices.IndexFunc(keys, func(k connectors.MetadataKey) bool { return k.Name == name })
		if j < 0 {
			known := make([]string, len(keys))
			for i, k := range keys {
				known[i] = k.Name
			}
			return nil, sqlerr.New(sqlerr.InvalidParameter, m.P, "column %q: unknown metadata key '%s' for connector '%s' (known: %s)", d.Name, name, connector, strings.Join(known, ", "))
		}
		k := keys[j]
		if !slices.Contains(k.Types, cols[i].Type.Name) {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, d.Type.P, "metadata column %q ('%s') must be %s, not %s", d.Name, name, typeList(k.Types), cols[i].Type)
		}
		if sink {
			if m.Virtual {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, m.P, "column %q: a sink writes every column it declares; VIRTUAL (read-only) metadata columns belong to streams", d.Name)
			}
			if !k.Writable {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, m.P, "column %q: metadata '%s' is read-only; a sink cannot write it", d.Name, name)
			}
		}
		cols[i].MetadataKey, cols[i].Virtual = name, m.Virtual
	}
	if pk == nil {
		return nil, nil
	}
	table := !sink && connector == "" // a table: the key its INSERTs upsert by (table.go)
	if !takesPK && !table {
		what := "connector '" + connector + "'"
		if connector == "" {
			what = "a sink without a connector"
		}
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, pk.P, "%s takes no PRIMARY KEY", what)
	}
	if pk.Enforced && !table {
		e := sqlerr.New(sqlerr.FeatureNotSupported, pk.P, "connector '%s' takes its PRIMARY KEY declared NOT ENFORCED", connector)
		e.Hint = "Declare PRIMARY KEY (...) NOT ENFORCED: the connector uses the key, nothing checks it."
		return nil, e
	}
	for i, name := range pk.Columns {
		j := slices.IndexFunc(cols, func(c catalog.Column) bool { return c.Name == name })
		switch {
		case j < 0:
			return nil, sqlerr.New(sqlerr.UndefinedColumn, pk.ColumnsP[i], "column %q named in key does not exist", name)
		case slices.Contains(pk.Columns[:i], name):
			return nil, sqlerr.New(sqlerr.DuplicateColumn, pk.ColumnsP[i], "column %q appears twice in primary key constraint", name)
		case cols[j].MetadataKey != "":
			return nil, sqlerr.New(sqlerr.InvalidTableDefinition, pk.ColumnsP[i], "primary key column %q is a metadata column; a key is made of the data's columns", name)
		}
	}
	return slices.Clone(pk.Columns), nil
}

func typeList(ts []string) string {
	if len(ts) == 1 {
		return ts[0]
	}
	return ts[0] + " or " + ts[1]
}
