package planner

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/kafka"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// metadataSink is a sink connector with Kafka's metadata (no Kafka sink is registered in this package's tests):
// what the planner checks of a sink's metadata columns against the registry.
type metadataSink struct{}

func (metadataSink) Name() string                                                      { return "test-metadata-sink" }
func (metadataSink) Options() connectors.OptionNames                                   { return connectors.OptionNames{} }
func (metadataSink) Validate(connectors.Spec, map[string]string, connectors.Env) error { return nil }
func (metadataSink) Build(connectors.Spec, map[string]string, connectors.Env) (connectors.SinkPlan, error) {
	return connectors.SinkPlan{}, nil
}
func (metadataSink) Capabilities(map[string]string) connectors.SinkCapabilities {
	return connectors.SinkCapabilities{Metadata: kafka.Metadata}
}

func init() { connectors.RegisterSink(metadataSink{}) }

// definition parses one CREATE STREAM or CREATE SINK and runs definitionExtras on it with connector.
func definition(t *testing.T, connector, sql string) ([]catalog.Column, []string, error) {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var defs []parser.ColumnDef
	var pk *parser.PrimaryKey
	sink := false
	switch s := stmts[0].(type) {
	case *parser.CreateStream:
		defs, pk = s.Columns, s.PrimaryKey
	case *parser.CreateSink:
		defs, pk, sink = s.Columns, s.PrimaryKey, true
	}
	cols, _, err := columnsOf(defs)
	if err != nil {
		t.Fatal(err)
	}
	key, err := definitionExtras(sink, map[string]string{"connector": connector}, defs, pk, cols)
	return cols, key, err
}

// Kafka's metadata columns are stored with their key (the column's name when FROM is not given) and VIRTUAL flag,
// and upsert-kafka's primary key with its columns.
func TestMetadataColumnsStored(t *testing.T) {
	cols, key, err := definition(t, "upsert-kafka", `CREATE STREAM k (id BIGINT, name VARCHAR,
		ts TIMESTAMP(3) METADATA FROM 'timestamp', partition INT METADATA VIRTUAL, "offset" BIGINT METADATA VIRTUAL,
		h TEXT METADATA FROM 'headers', PRIMARY KEY (name, id) NOT ENFORCED)`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cols {
		got = append(got, fmt.Sprintf("%s %s %s", c.Name, c.Type, c.Definition()))
	}
	want := []string{"id BIGINT ", "name VARCHAR ", "ts TIMESTAMP(3) METADATA FROM 'timestamp'",
		"partition INT METADATA FROM 'partition' VIRTUAL", "offset BIGINT METADATA FROM 'offset' VIRTUAL",
		"h TEXT METADATA FROM 'headers'"}
	if !slices.Equal(got, want) {
		t.Fatalf("columns\n%q\nwant\n%q", got, want)
	}
	if !slices.Equal(key, []string{"name", "id"}) {
		t.Fatalf("primary key %q", key)
	}
	// A sink writes the writable keys.
	if _, _, err := definition(t, "test-metadata-sink", `CREATE SINK o (v INT, ts TIMESTAMP METADATA FROM 'timestamp', headers VARCHAR METADATA) WITH (connector = 'test-metadata-sink')`); err != nil {
		t.Fatal(err)
	}
}

// What Kafka's metadata and keys refuse, each at its position.
func TestMetadataRefusals(t *testing.T) {
	for _, tc := range []struct{ connector, sql, want string }{
		{"kafka", `CREATE STREAM k (a INT, x INT METADATA FROM 'nope')`,
			"22023 at 30: column \"x\": unknown metadata key 'nope' for connector 'kafka' (known: topic, partition, headers, leader-epoch, offset, timestamp, timestamp-type)"},
		{"kafka", `CREATE STREAM k (a INT, nope INT METADATA)`, "22023 at 33: column \"nope\": unknown metadata key 'nope'"},
		{"kafka", `CREATE STREAM k (a INT, "offset" INT METADATA VIRTUAL)`,
			"42804 at 33: metadata column \"offset\" ('offset') must be BIGINT, not INT"},
		{"kafka", `CREATE STREAM k (a INT, ts BIGINT METADATA FROM 'timestamp')`,
			"42804 at 27: metadata column \"ts\" ('timestamp') must be TIMESTAMP, not BIGINT"},
		{"test-metadata-sink", `CREATE SINK k (a INT, p INT METADATA FROM 'partition') WITH (connector = 'test-metadata-sink')`,
			"0A000 at 28: column \"p\": metadata 'partition' is read-only; a sink cannot write it"},
		{"test-metadata-sink", `CREATE SINK k (a INT, ts TIMESTAMP METADATA FROM 'timestamp' VIRTUAL) WITH (connector = 'test-metadata-sink')`,
			"0A000 at 35: column \"ts\": a sink writes every column it declares; VIRTUAL"},
		{"kafka", `CREATE STREAM k (a INT, PRIMARY KEY (a) NOT ENFORCED)`,
			"0A000 at 24: connector 'kafka' takes no PRIMARY KEY"},
		{"upsert-kafka", `CREATE STREAM k (a INT, PRIMARY KEY (b) NOT ENFORCED)`,
			"42703 at 37: column \"b\" named in key does not exist"},
		{"upsert-kafka", `CREATE STREAM k (a INT, PRIMARY KEY (a, a) NOT ENFORCED)`,
			"42701 at 40: column \"a\" appears twice in primary key constraint"},
		{"upsert-kafka", `CREATE STREAM k (a INT, o BIGINT METADATA FROM 'offset', PRIMARY KEY (o) NOT ENFORCED)`,
			"42P16 at 70: primary key column \"o\" is a metadata column"},
	} {
		_, _, err := definition(t, tc.connector, tc.sql)
		e, ok := err.(*sqlerr.Error)
		if !ok {
			t.Errorf("%s: %v, want %s", tc.sql, err, tc.want)
			continue
		}
		if got := fmt.Sprintf("%s at %d: %s", e.Code, e.Pos, e.Msg); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
}
