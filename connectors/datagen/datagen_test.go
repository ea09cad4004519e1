package datagen

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/operators"
)

var genSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64},
	{Name: "url", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32},
}, nil)

const ts2026ms = 20454 * 86_400_000 // 2026-01-01 in milliseconds

func genConfig(rows int64) Config {
	return Config{
		Schema: genSchema,
		Fields: []Field{
			{Kind: Sequence, Start: 1, End: math.MaxInt64},
			{Kind: Random, Min: 10, Max: 20, NullRate: 0.1},
			{Kind: Random, MinF: 1, MaxF: 100},
			{Kind: Random, Length: 12, NullRate: 0.05},
			{Kind: Sequence, Start: ts2026ms, End: math.MaxInt64, Step: 10},
			{Kind: Random, Min: -500, Max: 500},
			{Kind: Random},
			{Kind: Random},
		},
		Seed:           42,
		Rows:           rows,
		BatchRows:      100,
		EventTime:      "ts",
		WatermarkBound: time.Second,
	}
}

// Pins: generated values depending on anything but (seed, column, row): batch size, a stateful random stream, or
// the run.
func TestGeneratorDeterministic(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	a, _ := connectortest.Drain(t, mem, New(genConfig(1000)), nil, 0, 1, -1)
	cfg := genConfig(1000)
	cfg.BatchRows = 77
	b, _ := connectortest.Drain(t, mem, New(cfg), nil, 0, 1, -1)
	if len(a.Rows) != 1000 {
		t.Fatalf("%d rows, want 1000", len(a.Rows))
	}
	if !reflect.DeepEqual(a.Rows, b.Rows) {
		t.Fatal("same seed, different batch size: different rows")
	}
	cfg.Seed = 43
	c, _ := connectortest.Drain(t, mem, New(cfg), nil, 0, 1, -1)
	same := 0
	for i := range c.Rows {
		if c.Rows[i].Values[2] == a.Rows[i].Values[2] {
			same++
		}
	}
	if same > 10 {
		t.Fatalf("another seed reproduced %d of 1000 random doubles", same)
	}
}

// Pins: a replay from a restored offset producing other rows than the uninterrupted run (duplicates or gaps at
// the seam), or a watermark that goes back after the restore.
func TestGeneratorReplayFromOffset(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	full, _ := connectortest.Drain(t, mem, New(genConfig(2000)), nil, 0, 1, -1)
	head, off := connectortest.Drain(t, mem, New(genConfig(2000)), nil, 0, 1, 7)
	tail, _ := connectortest.Drain(t, mem, New(genConfig(2000)), off, 0, 1, -1)
	if len(head.Rows) != 700 {
		t.Fatalf("head has %d rows", len(head.Rows))
	}
	if got := append(slices.Clone(head.Rows), tail.Rows...); !reflect.DeepEqual(got, full.Rows) {
		t.Fatalf("head (%d) + restored tail (%d) differ from the uninterrupted run (%d)", len(head.Rows),
			len(tail.Rows), len(full.Rows))
	}
	if tail.WMs[0] < head.WMs[len(head.WMs)-1] {
		t.Fatalf("watermark went back from %d to %d across the restore", head.WMs[len(head.WMs)-1], tail.WMs[0])
	}
	// Restoring a finished generator produces nothing.
	_, end := connectortest.Drain(t, mem, New(genConfig(2000)), nil, 0, 1, -1)
	rest, _ := connectortest.Drain(t, mem, New(genConfig(2000)), end, 0, 1, -1)
	if len(rest.Rows) != 0 {
		t.Fatalf("restored finished generator produced %d rows", len(rest.Rows))
	}
}

// Pins: parallel subtasks producing overlapping sequences or leaving gaps; a row count or a sequence end not
// respected across subtasks.
func TestGeneratorParallelSubtasksSplitTheRows(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	for _, tc := range []struct {
		name string
		cfg  func() Config
		want int64
	}{
		{"rows", func() Config { return genConfig(1001) }, 1001},
		{"sequence end", func() Config {
			c := genConfig(0)
			c.Fields[0] = Field{Kind: Sequence, Start: 1, End: 500}
			return c
		}, 500},
		{"fewer rows than subtasks", func() Config { return genConfig(2) }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const par = 3
			single, _ := connectortest.Drain(t, mem, New(tc.cfg()), nil, 0, 1, -1)
			var ids []int64
			union := map[int64]operators.Row{}
			for sub := range par {
				run, _ := connectortest.Drain(t, mem, New(tc.cfg()), nil, sub, par, -1)
				for _, r := range run.Rows {
					id := r.Values[0].(int64)
					ids = append(ids, id)
					union[id] = r
				}
			}
			slices.Sort(ids)
			if int64(len(ids)) != tc.want || len(union) != len(ids) {
				t.Fatalf("%d ids (%d distinct), want %d distinct", len(ids), len(union), tc.want)
			}
			for i, id := range ids {
				if id != int64(i)+1 {
					t.Fatalf("ids do not cover 1..%d: position %d holds %d", tc.want, i, id)
				}
			}
			// The rows themselves do not depend on the parallelism.
			for _, r := range single.Rows {
				if !reflect.DeepEqual(union[r.Values[0].(int64)], r) {
					t.Fatalf("row %v differs at parallelism %d: %v", r, par, union[r.Values[0].(int64)])
				}
			}
		})
	}
}

// Pins: values outside their configured ranges, sequences with the wrong step, strings of the wrong length or
// alphabet, NULLs in a column without a null rate, and a column's values changing when another is added.
func TestGeneratorValues(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	run, _ := connectortest.Drain(t, mem, New(genConfig(3000)), nil, 0, 1, -1)
	nullUsers, trues := 0, 0
	seenUser := map[int64]bool{}
	for i, r := range run.Rows {
		v := r.Values
		if v[0] != int64(i+1) {
			t.Fatalf("row %d: id %v", i, v[0])
		}
		if u, ok := v[1].(int64); ok {
			if u < 10 || u > 20 {
				t.Fatalf("row %d: user %d outside [10, 20]", i, u)
			}
			seenUser[u] = true
		} else {
			nullUsers++
		}
		if p := v[2].(float64); p < 1 || p >= 100 {
			t.Fatalf("row %d: price %v outside [1, 100)", i, p)
		}
		if s, ok := v[3].(string); ok && (len(s) != 12 || strings.Trim(s, alphanumeric) != "") {
			t.Fatalf("row %d: url %q", i, s)
		}
		wantTS := time.UnixMilli(ts2026ms + 10*int64(i)).UTC()
		if !v[4].(time.Time).Equal(wantTS) {
			t.Fatalf("row %d: ts %v, want %v", i, v[4], wantTS)
		}
		var amount float64
		if _, err := fmt.Sscan(v[5].(string), &amount); err != nil || amount < -5 || amount > 5 {
			t.Fatalf("row %d: amount %v outside [-5.00, 5.00]", i, v[5])
		}
		if v[6].(bool) {
			trues++
		}
		if d := v[7].(time.Time); d.Year() < 1970 || d.Year() > 2038 {
			t.Fatalf("row %d: day %v outside the default range", i, d)
		}
	}
	if nullUsers < 200 || nullUsers > 400 { // 10% of 3000, generously
		t.Errorf("%d NULL users of 3000 at null rate 0.1", nullUsers)
	}
	if len(seenUser) != 11 {
		t.Errorf("random users cover %d of the 11 values in [10, 20]", len(seenUser))
	}
	if trues < 1300 || trues > 1700 {
		t.Errorf("%d of 3000 booleans true", trues)
	}

	// Values are keyed by column name: a schema with an extra column keeps the other columns' values.
	cfg := genConfig(3000)
	cfg.Schema = arrow.NewSchema(append([]arrow.Field{{Name: "extra", Type: arrow.PrimitiveTypes.Int64}},
		genSchema.Fields()...), nil)
	cfg.Fields = append([]Field{{Kind: Random}}, cfg.Fields...)
	wider, _ := connectortest.Drain(t, mem, New(cfg), nil, 0, 1, -1)
	for i := range run.Rows {
		if !reflect.DeepEqual(wider.Rows[i].Values[1:], run.Rows[i].Values) {
			t.Fatalf("row %d changed when a column was added: %v vs %v", i, wider.Rows[i].Values[1:], run.Rows[i].Values)
		}
	}
}

// Pins: a watermark that is not max(event time) - bound in microseconds, or that is reported before any event.
func TestGeneratorWatermark(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	run, _ := connectortest.Drain(t, mem, New(genConfig(250)), nil, 0, 1, -1)
	for b, wm := range run.WMs {
		last := min(100*(b+1), 250) - 1 // the batch's last row
		want := (ts2026ms+10*int64(last))*1000 - 1_000_000
		if wm != want {
			t.Fatalf("watermark after batch %d: %d, want %d", b, wm, want)
		}
	}
	cfg := genConfig(10)
	cfg.EventTime = ""
	src := New(cfg)
	connectortest.Must(t, src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
	res, err := src.Produce(context.Background())
	connectortest.Must(t, err)
	res.Batch.Release()
	if res.WM != exec.MinWatermark {
		t.Fatalf("watermark without event time: %d", res.WM)
	}
	connectortest.Must(t, src.Close())
}

// Pins: a throttled generator exceeding its rate, or blocking a cancelled context (a job that cannot stop).
func TestGeneratorThrottleAndCancel(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	cfg := genConfig(300)
	cfg.RowsPerSecond = 1000
	start := time.Now()
	run, _ := connectortest.Drain(t, mem, New(cfg), nil, 0, 1, -1)
	if len(run.Rows) != 300 {
		t.Fatalf("%d rows", len(run.Rows))
	}
	// 300 rows at 1000/s: the last batch (of 100) is due at 200 ms.
	if el := time.Since(start); el < 180*time.Millisecond {
		t.Fatalf("300 rows at 1000 rows/s took %v", el)
	}

	cfg.RowsPerSecond = 0.5 // one row every two seconds
	connectortest.RequireSlowThrottle(t, mem, New(cfg))
}

// Pins: bad configurations (wrong field count, unknown event-time column, ranges that do not fit the type, an
// offset from another parallelism) being accepted.
func TestGeneratorConfigErrors(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	bad := map[string]func(c *Config){
		"field count":     func(c *Config) { c.Fields = c.Fields[:2] },
		"event column":    func(c *Config) { c.EventTime = "nope" },
		"event type":      func(c *Config) { c.EventTime = "url" },
		"int32 range":     func(c *Config) { c.Fields[1].Max = math.MaxInt32 + 1 },
		"empty range":     func(c *Config) { c.Fields[1].Min, c.Fields[1].Max = 5, 4 },
		"sequence order":  func(c *Config) { c.Fields[0].End = 0 },
		"null not null":   func(c *Config) { c.Fields[0].NullRate = 0.5 },
		"bool sequence":   func(c *Config) { c.Fields[6].Kind = Sequence },
		"float range":     func(c *Config) { c.Fields[2].MinF, c.Fields[2].MaxF = 2, 1 },
		"decimal digits":  func(c *Config) { c.Fields[5].Max = 10_000_000_000 },
		"negative rows":   func(c *Config) { c.Rows = -1 },
		"negative length": func(c *Config) { c.Fields[3].Length = -1 },
	}
	for name, mutate := range bad {
		cfg := genConfig(10)
		mutate(&cfg)
		if err := New(cfg).Open(connectortest.NewTask(mem, connectortest.TaskOpts{})); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	_, off := connectortest.Drain(t, mem, New(genConfig(10)), nil, 0, 2, 1)
	src := New(genConfig(10))
	connectortest.Must(t, src.RestoreOffset(off))
	if err := src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: 0, Par: 3})); err == nil {
		t.Error("offset of parallelism 2 restored at parallelism 3")
	}
	if err := New(genConfig(10)).RestoreOffset([]byte("junk")); err == nil {
		t.Error("junk offset accepted")
	}
}

// Pins: a bounded generator's progress (exec.SourceProgress) not matching the rows it produces, per subtask and
// after a restore; an unbounded one claiming a total.
func TestGeneratorProgress(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	for _, par := range []int{1, 3} {
		var all int64
		for sub := range par {
			read, total := connectortest.RequireRowProgress(t, mem, New(genConfig(1000)), nil, sub, par)
			if read != total {
				t.Fatalf("subtask %d of %d read %d rows of a total of %d", sub, par, read, total)
			}
			all += total
		}
		if all != 1000 {
			t.Fatalf("parallelism %d: totals add up to %d, want 1000", par, all)
		}
	}
	_, off := connectortest.Drain(t, mem, New(genConfig(1000)), nil, 0, 1, 3)
	if read, total := connectortest.RequireRowProgress(t, mem, New(genConfig(1000)), off, 0, 1); read != 700 || total != 1000 {
		t.Fatalf("restored after 300 rows: read %d of %d", read, total)
	}
	// Through the wrapper of a stream's WATERMARK clause too.
	noWM := func(*exec.TaskContext, arrow.RecordBatch) (int64, bool, error) { return 0, false, nil }
	if read, total := connectortest.RequireRowProgress(t, mem, operators.WithWatermark(New(genConfig(500)), noWM), nil, 0, 1); read != 500 || total != 500 {
		t.Fatalf("wrapped in a watermark: read %d of %d", read, total)
	}
	noRows := genConfig(0) // no row count and no sequence column: unbounded
	noRows.Fields[0], noRows.Fields[4] = Field{Kind: Random}, Field{Kind: Random}
	// No row count, and sequences without an end: they end at their type's largest value, but the stream is
	// unbounded to the planner, and a lag of 10^18 rows would be noise.
	for name, cfg := range map[string]Config{"random": noRows, "endless sequence": genConfig(0)} {
		g := New(cfg)
		connectortest.Must(t, g.Open(connectortest.NewTask(mem, connectortest.TaskOpts{})))
		res, err := g.Produce(context.Background())
		connectortest.Must(t, err)
		res.Batch.Release()
		if lag, bytes, total := g.(exec.SourceProgress).Progress(); lag != -1 || bytes != -1 || total != -1 {
			t.Errorf("%s: unbounded generator's progress: %d, %d, %d; want all unknown", name, lag, bytes, total)
		}
		connectortest.Must(t, g.Close())
	}
}
