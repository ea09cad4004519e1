package operators

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
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/exec"
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

func genConfig(rows int64) GeneratorConfig {
	return GeneratorConfig{
		Schema: genSchema,
		Fields: []GenField{
			{Kind: GenSequence, Start: 1, End: math.MaxInt64},
			{Kind: GenRandom, Min: 10, Max: 20, NullRate: 0.1},
			{Kind: GenRandom, MinF: 1, MaxF: 100},
			{Kind: GenRandom, Length: 12, NullRate: 0.05},
			{Kind: GenSequence, Start: ts2026ms, End: math.MaxInt64, Step: 10},
			{Kind: GenRandom, Min: -500, Max: 500},
			{Kind: GenRandom},
			{Kind: GenRandom},
		},
		Seed:           42,
		Rows:           rows,
		BatchRows:      100,
		EventTime:      "ts",
		WatermarkBound: time.Second,
	}
}

type genRun struct {
	rows []Row
	wms  []int64 // watermark after each batch
}

// drain opens src (after restoring offset, if any) as subtask sub of par and produces up to maxBatches batches
// (all when maxBatches < 0). It returns the rows, the watermarks, and the offset after the last batch.
func drain(t *testing.T, mem memory.Allocator, src exec.Source, offset []byte, sub, par, maxBatches int) (genRun, []byte) {
	t.Helper()
	if offset != nil {
		must(t, src.RestoreOffset(offset))
	}
	must(t, src.Open(newTask(mem, taskOpts{sub: sub, par: par})))
	var run genRun
	for batches := 0; maxBatches < 0 || batches < maxBatches; {
		res, err := src.Produce(context.Background())
		must(t, err)
		if res.Status == exec.Finished {
			break
		}
		if res.Status != exec.Produced {
			continue
		}
		rows, err := goRows(res.Batch)
		res.Batch.Release()
		must(t, err)
		run.rows = append(run.rows, rows...)
		run.wms = append(run.wms, res.WM)
		batches++
	}
	off, err := src.SnapshotOffset()
	must(t, err)
	must(t, src.Close())
	return run, off
}

// Pins: generated values depending on anything but (seed, column, row): batch size, a stateful random stream, or
// the run.
func TestGeneratorDeterministic(t *testing.T) {
	mem := checkedAlloc(t)
	a, _ := drain(t, mem, NewGenerator(genConfig(1000)), nil, 0, 1, -1)
	cfg := genConfig(1000)
	cfg.BatchRows = 77
	b, _ := drain(t, mem, NewGenerator(cfg), nil, 0, 1, -1)
	if len(a.rows) != 1000 {
		t.Fatalf("%d rows, want 1000", len(a.rows))
	}
	if !reflect.DeepEqual(a.rows, b.rows) {
		t.Fatal("same seed, different batch size: different rows")
	}
	cfg.Seed = 43
	c, _ := drain(t, mem, NewGenerator(cfg), nil, 0, 1, -1)
	same := 0
	for i := range c.rows {
		if c.rows[i].Values[2] == a.rows[i].Values[2] {
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
	mem := checkedAlloc(t)
	full, _ := drain(t, mem, NewGenerator(genConfig(2000)), nil, 0, 1, -1)
	head, off := drain(t, mem, NewGenerator(genConfig(2000)), nil, 0, 1, 7)
	tail, _ := drain(t, mem, NewGenerator(genConfig(2000)), off, 0, 1, -1)
	if len(head.rows) != 700 {
		t.Fatalf("head has %d rows", len(head.rows))
	}
	if got := append(slices.Clone(head.rows), tail.rows...); !reflect.DeepEqual(got, full.rows) {
		t.Fatalf("head (%d) + restored tail (%d) differ from the uninterrupted run (%d)", len(head.rows),
			len(tail.rows), len(full.rows))
	}
	if tail.wms[0] < head.wms[len(head.wms)-1] {
		t.Fatalf("watermark went back from %d to %d across the restore", head.wms[len(head.wms)-1], tail.wms[0])
	}
	// Restoring a finished generator produces nothing.
	_, end := drain(t, mem, NewGenerator(genConfig(2000)), nil, 0, 1, -1)
	rest, _ := drain(t, mem, NewGenerator(genConfig(2000)), end, 0, 1, -1)
	if len(rest.rows) != 0 {
		t.Fatalf("restored finished generator produced %d rows", len(rest.rows))
	}
}

// Pins: parallel subtasks producing overlapping sequences or leaving gaps; a row count or a sequence end not
// respected across subtasks.
func TestGeneratorParallelSubtasksSplitTheRows(t *testing.T) {
	mem := checkedAlloc(t)
	for _, tc := range []struct {
		name string
		cfg  func() GeneratorConfig
		want int64
	}{
		{"rows", func() GeneratorConfig { return genConfig(1001) }, 1001},
		{"sequence end", func() GeneratorConfig {
			c := genConfig(0)
			c.Fields[0] = GenField{Kind: GenSequence, Start: 1, End: 500}
			return c
		}, 500},
		{"fewer rows than subtasks", func() GeneratorConfig { return genConfig(2) }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const par = 3
			single, _ := drain(t, mem, NewGenerator(tc.cfg()), nil, 0, 1, -1)
			var ids []int64
			union := map[int64]Row{}
			for sub := range par {
				run, _ := drain(t, mem, NewGenerator(tc.cfg()), nil, sub, par, -1)
				for _, r := range run.rows {
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
			for _, r := range single.rows {
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
	mem := checkedAlloc(t)
	run, _ := drain(t, mem, NewGenerator(genConfig(3000)), nil, 0, 1, -1)
	nullUsers, trues := 0, 0
	seenUser := map[int64]bool{}
	for i, r := range run.rows {
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
	cfg.Fields = append([]GenField{{Kind: GenRandom}}, cfg.Fields...)
	wider, _ := drain(t, mem, NewGenerator(cfg), nil, 0, 1, -1)
	for i := range run.rows {
		if !reflect.DeepEqual(wider.rows[i].Values[1:], run.rows[i].Values) {
			t.Fatalf("row %d changed when a column was added: %v vs %v", i, wider.rows[i].Values[1:], run.rows[i].Values)
		}
	}
}

// Pins: a watermark that is not max(event time) - bound in microseconds, or that is reported before any event.
func TestGeneratorWatermark(t *testing.T) {
	mem := checkedAlloc(t)
	run, _ := drain(t, mem, NewGenerator(genConfig(250)), nil, 0, 1, -1)
	for b, wm := range run.wms {
		last := min(100*(b+1), 250) - 1 // the batch's last row
		want := (ts2026ms+10*int64(last))*1000 - 1_000_000
		if wm != want {
			t.Fatalf("watermark after batch %d: %d, want %d", b, wm, want)
		}
	}
	cfg := genConfig(10)
	cfg.EventTime = ""
	src := NewGenerator(cfg)
	must(t, src.Open(newTask(mem, taskOpts{})))
	res, err := src.Produce(context.Background())
	must(t, err)
	res.Batch.Release()
	if res.WM != exec.MinWatermark {
		t.Fatalf("watermark without event time: %d", res.WM)
	}
	must(t, src.Close())
}

// Pins: a throttled generator exceeding its rate, or blocking a cancelled context (a job that cannot stop).
func TestGeneratorThrottleAndCancel(t *testing.T) {
	mem := checkedAlloc(t)
	cfg := genConfig(300)
	cfg.RowsPerSecond = 1000
	start := time.Now()
	run, _ := drain(t, mem, NewGenerator(cfg), nil, 0, 1, -1)
	if len(run.rows) != 300 {
		t.Fatalf("%d rows", len(run.rows))
	}
	// 300 rows at 1000/s: the last batch (of 100) is due at 200 ms.
	if el := time.Since(start); el < 180*time.Millisecond {
		t.Fatalf("300 rows at 1000 rows/s took %v", el)
	}

	cfg.RowsPerSecond = 0.5 // one row every two seconds
	requireSlowThrottle(t, mem, NewGenerator(cfg))
}

// requireSlowThrottle checks a source throttled to a row every two seconds or so: its first row is due at once,
// the next Produce is Idle after at most maxThrottleWait, and one whose context is cancelled while it waits
// returns Idle at once.
func requireSlowThrottle(t *testing.T, mem memory.Allocator, src exec.Source) {
	t.Helper()
	must(t, src.Open(newTask(mem, taskOpts{})))
	ctx, cancel := context.WithCancel(context.Background())
	res, err := src.Produce(ctx) // the first row is due at once
	must(t, err)
	if res.Status != exec.Produced || res.Batch.Rows() != 1 {
		t.Fatalf("first throttled produce: %v, %d rows", res.Status, res.Batch.Rows())
	}
	res.Batch.Release()
	res, err = src.Produce(ctx) // the next one is two seconds away: Idle after at most maxThrottleWait
	must(t, err)
	if res.Status != exec.Idle {
		t.Fatalf("produce before the next row is due: %v", res.Status)
	}
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	start := time.Now()
	res, err = src.Produce(ctx)
	must(t, err)
	if el := time.Since(start); el > 80*time.Millisecond || res.Status != exec.Idle {
		t.Fatalf("produce with a cancelled context: %v after %v", res.Status, el)
	}
	must(t, src.Close())
}

// Pins: bad configurations (wrong field count, unknown event-time column, ranges that do not fit the type, an
// offset from another parallelism) being accepted.
func TestGeneratorConfigErrors(t *testing.T) {
	mem := checkedAlloc(t)
	bad := map[string]func(c *GeneratorConfig){
		"field count":     func(c *GeneratorConfig) { c.Fields = c.Fields[:2] },
		"event column":    func(c *GeneratorConfig) { c.EventTime = "nope" },
		"event type":      func(c *GeneratorConfig) { c.EventTime = "url" },
		"int32 range":     func(c *GeneratorConfig) { c.Fields[1].Max = math.MaxInt32 + 1 },
		"empty range":     func(c *GeneratorConfig) { c.Fields[1].Min, c.Fields[1].Max = 5, 4 },
		"sequence order":  func(c *GeneratorConfig) { c.Fields[0].End = 0 },
		"null not null":   func(c *GeneratorConfig) { c.Fields[0].NullRate = 0.5 },
		"bool sequence":   func(c *GeneratorConfig) { c.Fields[6].Kind = GenSequence },
		"float range":     func(c *GeneratorConfig) { c.Fields[2].MinF, c.Fields[2].MaxF = 2, 1 },
		"decimal digits":  func(c *GeneratorConfig) { c.Fields[5].Max = 10_000_000_000 },
		"negative rows":   func(c *GeneratorConfig) { c.Rows = -1 },
		"negative length": func(c *GeneratorConfig) { c.Fields[3].Length = -1 },
	}
	for name, mutate := range bad {
		cfg := genConfig(10)
		mutate(&cfg)
		if err := NewGenerator(cfg).Open(newTask(mem, taskOpts{})); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	_, off := drain(t, mem, NewGenerator(genConfig(10)), nil, 0, 2, 1)
	src := NewGenerator(genConfig(10))
	must(t, src.RestoreOffset(off))
	if err := src.Open(newTask(mem, taskOpts{sub: 0, par: 3})); err == nil {
		t.Error("offset of parallelism 2 restored at parallelism 3")
	}
	if err := NewGenerator(genConfig(10)).RestoreOffset([]byte("junk")); err == nil {
		t.Error("junk offset accepted")
	}
}
