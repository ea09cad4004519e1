package agg

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/optest"
)

var overSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "d", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, // LAG's default
}, nil)

// overFuncs: SUM(v), COUNT(*), MIN(v), MAX(v), COUNT(v) FILTER (WHERE ...) is left to the planner tests; LAG(v, 2, d).
func overFuncs() []OverFunc {
	return []OverFunc{
		{Func: AggSum, Arg: 2, Filter: -1}, {Func: AggCountStar, Arg: -1, Filter: -1},
		{Func: AggMin, Arg: 2, Filter: -1}, {Func: AggMax, Arg: 2, Filter: -1},
		{Lag: true, Arg: 2, Offset: 2, Default: 3},
	}
}

type overIn struct {
	k, v *int64
	ts   int64 // seconds
	seq  int
}

// overModel computes the expected output rows: every accepted row, with its frame's aggregates over the accepted
// rows of its partition in (time, arrival) order.
func overModel(rows []overIn, partitioned, rangeFrame bool, preceding int64) []string {
	parts := map[string][]overIn{}
	for _, r := range rows {
		key := "NULL"
		if !partitioned {
			key = ""
		} else if r.k != nil {
			key = fmt.Sprint(*r.k)
		}
		parts[key] = append(parts[key], r)
	}
	var out []string
	str := func(p *int64) string {
		if p == nil {
			return "NULL"
		}
		return fmt.Sprint(*p)
	}
	for _, rs := range parts {
		slices.SortStableFunc(rs, func(a, b overIn) int { return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.seq, b.seq)) })
		for i, r := range rs {
			var frame []overIn
			for j, q := range rs {
				in := false
				switch {
				case rangeFrame && preceding < 0:
					in = q.ts <= r.ts
				case rangeFrame:
					in = q.ts <= r.ts && q.ts >= r.ts-preceding
				case preceding < 0:
					in = j <= i
				default:
					in = j <= i && j >= i-int(preceding)
				}
				if in {
					frame = append(frame, q)
				}
			}
			var sum, mn, mx *int64
			for _, q := range frame {
				if q.v == nil {
					continue
				}
				v := *q.v
				if sum == nil {
					s, a, b := v, v, v
					sum, mn, mx = &s, &a, &b
					continue
				}
				*sum += v
				*mn = min(*mn, v)
				*mx = max(*mx, v)
			}
			lag := "NULL" // the default column d is NULL in even rows, r.seq otherwise
			if i >= 2 {
				lag = str(rs[i-2].v)
			} else if r.seq%2 == 1 {
				lag = fmt.Sprint(r.seq)
			}
			ts := time.Unix(r.ts, 0).UTC().Format("2006-01-02 15:04:05")
			d := "NULL"
			if r.seq%2 == 1 {
				d = fmt.Sprint(r.seq)
			}
			out = append(out, strings.Join([]string{str(r.k), ts, str(r.v), d, str(sum), fmt.Sprint(len(frame)), str(mn), str(mx), lag}, "|"))
		}
	}
	slices.Sort(out)
	return out
}

func TestOverAggregateRandomized(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	frames := []struct {
		rng       bool
		preceding int64
	}{{false, 2}, {false, 0}, {false, -1}, {true, 3}, {true, 0}, {true, -1}}
	seeds := 24
	if testing.Short() {
		seeds = 12
	}
	for seed := range uint64(seeds) {
		fr := frames[seed%uint64(len(frames))]
		rng := rand.New(rand.NewPCG(seed, 11))
		cfg := OverConfig{Partition: []int{0}, TimeCol: 1, Range: fr.rng, Funcs: overFuncs()}
		cfg.Preceding = fr.preceding
		if fr.rng && fr.preceding > 0 {
			cfg.Preceding = fr.preceding * 1e6
		}
		if seed%5 == 4 {
			cfg.Partition = nil // one partition
		}
		f, out, err := NewOverAggregate(cfg, overSchema)
		optest.Must(t, err)
		name := fmt.Sprintf("seed=%d range=%v preceding=%d partitions=%v", seed, fr.rng, fr.preceding, cfg.Partition)
		for _, pebble := range []bool{false, true} {
			h := optest.NewHarness(t, f, pebble, overSchema)
			h.Out, h.TimeCols = out, []int{1}
			optest.Must(t, h.Open("", 0))
			var accepted []overIn
			wm := int64(-1 << 62)
			seq := 0
			restoreRng := rand.New(rand.NewPCG(seed, 5))
			for step := range 40 {
				var rows [][]any
				for range 1 + rng.IntN(5) {
					in := overIn{ts: int64(rng.IntN(30)), seq: seq}
					if rng.IntN(8) != 0 {
						k := int64(rng.IntN(3))
						if cfg.Partition == nil {
							k = 1
						}
						in.k = &k
					}
					if rng.IntN(6) != 0 {
						v := int64(rng.IntN(10)) - 3
						in.v = &v
					}
					var d any
					if seq%2 == 1 {
						d = seq
					}
					var k, v any
					if in.k != nil {
						k = int(*in.k)
					}
					if in.v != nil {
						v = int(*in.v)
					}
					rows = append(rows, []any{k, int(in.ts * 1e6), v, d})
					if in.ts*1e6 > wm {
						accepted = append(accepted, in)
					}
					seq++
				}
				optest.Must(t, h.Process(0, rows, nil))
				if rng.IntN(3) == 0 {
					wm = max(wm, int64(step-6+rng.IntN(4))*1e6)
					optest.Must(t, h.Advance(wm))
				}
				if rng.IntN(4) == 0 {
					optest.Must(t, h.Barrier(!pebble || restoreRng.IntN(2) == 0))
				}
			}
			optest.Must(t, h.Finish())
			late, errs := h.Late.Load(), h.Errs.Load()
			if errs != 0 {
				t.Fatalf("%s: %d errors counted on valid input", name, errs)
			}
			optest.Must(t, h.Close())
			got := slices.Clone(h.Rows)
			slices.Sort(got)
			want := overModel(accepted, cfg.Partition != nil, fr.rng, fr.preceding)
			if !slices.Equal(got, want) {
				t.Fatalf("%s pebble=%v:\n got  %q\n want %q", name, pebble, got, want)
			}
			if int(late) != seq-len(accepted) {
				t.Fatalf("%s: %d late rows counted, want %d", name, late, seq-len(accepted))
			}
		}
	}
}

func TestOverAggregateRefusesRetractions(t *testing.T) {
	f, _, err := NewOverAggregate(OverConfig{TimeCol: 1, Preceding: -1, Funcs: overFuncs()}, overSchema)
	optest.Must(t, err)
	h := optest.NewHarness(t, f, false, overSchema)
	optest.Must(t, h.Open("", 0))
	if err := h.Process(0, [][]any{{1, 1, 1, nil}}, []exec.RowKind{exec.Delete}); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("a retraction was accepted: %v", err)
	}
	optest.Must(t, h.Close())
}
