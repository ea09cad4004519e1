package planner

import (
	"slices"
	"testing"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/sqlerr"
)

// keyedSink is a sink connector that applies a changelog by its PRIMARY KEY (as a database table sink does).
type keyedSink struct{ metadataSink }

func (keyedSink) Name() string { return "test-keyed-sink" }
func (keyedSink) Capabilities(map[string]string) connectors.SinkCapabilities {
	return connectors.SinkCapabilities{Changelog: true, PrimaryKey: true}
}

func init() { connectors.RegisterSink(keyedSink{}) }

// A keyed changelog sink takes an updating result only with a PRIMARY KEY (without one it is append-only), and
// type = 'upsert' with 'primary_key' declares that key; a 'primary_key' naming other columns than a declared
// PRIMARY KEY is refused. Other sinks keep their declared key.
func TestKeyedChangelogSink(t *testing.T) {
	cols := []catalog.Column{{Name: "k"}, {Name: "v"}}
	sink := func(pk []string, opts map[string]string) *catalog.Object {
		return &catalog.Object{Kind: catalog.Sink, Name: "s", Columns: cols, Options: opts, PrimaryKey: pk}
	}
	keyed := map[string]string{"connector": "test-keyed-sink"}
	if sinkTakesChangelog(sink(nil, keyed)) {
		t.Error("a keyed sink without a PRIMARY KEY takes a changelog")
	}
	if !sinkTakesChangelog(sink([]string{"k"}, keyed)) {
		t.Error("a keyed sink with a PRIMARY KEY does not take a changelog")
	}
	upsert := map[string]string{"connector": "test-keyed-sink", "type": "upsert", "primary_key": "K"}
	pos := map[string]int{"primary_key": 42}
	if pk, err := upsertSinkKey(upsert, pos, nil, cols); err != nil || !slices.Equal(pk, []string{"k"}) {
		t.Errorf("type = 'upsert': key %v, %v; want [k]", pk, err)
	}
	if pk, err := upsertSinkKey(upsert, pos, []string{"k"}, cols); err != nil || !slices.Equal(pk, []string{"k"}) {
		t.Errorf("both spellings of one key: %v, %v", pk, err)
	}
	if _, err := upsertSinkKey(upsert, pos, []string{"v"}, cols); sqlerr.Code(err) != sqlerr.InvalidParameter || sqlerr.As(err).Pos != 42 {
		t.Errorf("two different keys: %v, want 22023 at 'primary_key'", err)
	}
	other := map[string]string{"connector": "test-metadata-sink", "type": "upsert", "primary_key": "k"}
	if pk, err := upsertSinkKey(other, pos, nil, cols); err != nil || pk != nil {
		t.Errorf("a sink without a keyed changelog: key %v, %v; want none", pk, err)
	}
	missing := map[string]string{"connector": "test-keyed-sink", "type": "upsert", "primary_key": "nope"}
	if pk, err := upsertSinkKey(missing, pos, nil, cols); err != nil || pk != nil {
		t.Errorf("a key that is not a column (refused by SinkObject after): %v, %v", pk, err)
	}
}
