package datagen

import (
	"math"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/clinksql/clinksql/connectors/connectortest"
)

// Pins: datagen WITH options read into other values than the SQL literals say (units of TIMESTAMP steps,
// DECIMAL scale, DATE days), and misspelt options accepted silently.
func TestGeneratorConfigFromOptions(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "Name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	opts := map[string]string{
		"connector": "datagen", "number-of-rows": "100", "seed": "7", "rows-per-second": "5000",
		"fields.id.kind": "sequence", "fields.id.start": "1", "fields.id.end": "50",
		"fields.ts.kind": "sequence", "fields.ts.start": "2026-01-01 00:00:00", "fields.ts.step": "10 ms",
		"fields.name.length": "5", "fields.name.null-rate": "0.5",
		"fields.price.min": "1.50", "fields.price.max": "2",
		"fields.d.min": "2026-01-01", "fields.d.max": "2026-01-31",
		"fields.score.min": "0", "fields.score.max": "10",
	}
	cfg, err := ConfigFromOptions(schema, opts)
	connectortest.Must(t, err)
	want := []Field{
		{Kind: Sequence, Start: 1, End: 50},
		{Kind: Sequence, Start: 1767225600000, End: math.MaxInt64, Step: 10},
		{End: math.MaxInt64, Length: 5, NullRate: 0.5},
		{End: math.MaxInt64, Min: 150, Max: 200},
		{End: math.MaxInt64, Min: 20454, Max: 20484},
		{End: math.MaxInt64, MinF: 0, MaxF: 10},
	}
	if !reflect.DeepEqual(cfg.Fields, want) {
		t.Fatalf("fields\n got %+v\nwant %+v", cfg.Fields, want)
	}
	if cfg.Rows != 100 || cfg.Seed != 7 || cfg.RowsPerSecond != 5000 {
		t.Fatalf("rows %d, seed %d, rate %v", cfg.Rows, cfg.Seed, cfg.RowsPerSecond)
	}
	cfg.RowsPerSecond = 0
	run, _ := connectortest.Drain(t, mem, New(cfg), nil, 0, 1, -1)
	if len(run.Rows) != 50 {
		t.Fatalf("%d rows, want 50 (the id sequence ends)", len(run.Rows))
	}

	for _, bad := range []map[string]string{
		{"number-of-row": "1"},
		{"fields.nope.kind": "random"},
		{"fields.id.kynd": "random"},
		{"fields.id.kind": "counter"},
		{"fields.ts.step": "10 parsecs"},
		{"fields.ts.step": "1.5 ms"}, // TIMESTAMP(3) has no half milliseconds
		{"fields.d.min": "2026-13-01"},
		{"fields.price.max": "123456789012345678901"},
		{"seed": "x"},
	} {
		if _, err := ConfigFromOptions(schema, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	for step, want := range map[string]int64{"10ms": 10, "1 second": 1000, "2 min": 120000, "0.5 s": 500} {
		got, err := parseGenInterval(step, arrow.Millisecond)
		if err != nil || got != want {
			t.Errorf("step %q: %d, %v; want %d", step, got, err, want)
		}
	}
}
