package join

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/optest"
)

func temporalOp(t *testing.T, cfg TemporalJoinConfig) func(int) exec.Operator {
	t.Helper()
	return timeJoinOp(t, NewTemporalJoin, cfg, cfg.JoinSpec)
}

// temporalConfig joins the interval tests' inputs on k, as of l.ts, with r.ts the version time.
func temporalConfig(typ JoinType) TemporalJoinConfig {
	return TemporalJoinConfig{
		JoinSpec: JoinSpec{Type: typ, Left: intervalLeftSchema, Right: intervalRightSchema, LeftKeys: []int{0}, RightKeys: []int{0}},
		LeftTime: 1, RightTime: 1,
	}
}

func rightKinds(rows [][]any, kinds ...exec.RowKind) optest.InputRows {
	return optest.InputRows{In: 1, Rows: rows, Kinds: kinds}
}

// temporalScript: versions out of order, equal times, a delete, an update pair, a late row on each side. The
// expected rows below are derived by hand from the rule (the version of the key with the greatest time <= the left
// row's, the later arrival among equal times; none when it is a tombstone).
var temporalScript = []any{
	optest.Right(jr(1, "00:00:01", 100), jr(1, "00:00:05", 101)),
	optest.Left(jl(1, "00:00:03", "a1"), // 102 (time 2, arrives below) is its version
		jl(1, "00:00:05", "a2"),    // 101: equal times match
		jl(1, "00:00:00", "a0"),    // no version at or before 0
		jl(2, "00:00:04", "a3"),    // no version of key 2
		jl(nil, "00:00:04", "a4")), // a NULL key matches nothing
	optest.Right(jr(1, "00:00:02", 102)), // out of order, but on time: a1 has not fired
	optest.AllWM("00:00:03"),
	optest.Check(optest.Emitted(1)), // a0 only under LEFT; a1 at 3 is not passed yet
	optest.AllWM("00:00:06"),
	// Key 1 keeps only 101, the newest version below 6; key 2 and every fired left row are gone.
	optest.Check(optest.Keyed(1)),
	rightKinds([][]any{jr(1, "00:00:07", 101), jr(1, "00:00:09", 103)}, exec.Delete, exec.Insert),
	optest.Left(jl(1, "00:00:06", "a5"), // 999 (below: it takes effect at the watermark, 6)
		jl(1, "00:00:08", "a6"),      // the tombstone at 7: no version
		jl(1, "00:00:09", "a7"),      // 103
		jl(1, "00:00:05.5", "late")), // below the watermark
	rightKinds([][]any{jr(1, "00:00:09", 103), jr(1, "00:00:10", 104), jr(1, "00:00:05", 999)},
		exec.UpdateBefore, exec.UpdateAfter, exec.Insert), // the -U is ignored; 999 at 5 < 6 counts from 6
	optest.Left(jl(1, "00:00:10", "a8")), // 104
	optest.AllWM("00:00:20"),
	optest.Check(optest.Keyed(1)), // 104 alone
}

func TestTemporalJoinTypes(t *testing.T) {
	l := func(ts, a string) string { return outLeft("1", ts, a) }
	r := func(ts, b string) string { return outRight("1", ts, b) }
	a1 := joinedPair(l("00:00:03", "a1"), r("00:00:02", "102"))
	a2 := joinedPair(l("00:00:05", "a2"), r("00:00:05", "101"))
	a5 := joinedPair(l("00:00:06", "a5"), r("00:00:05", "999"))
	a7 := joinedPair(l("00:00:09", "a7"), r("00:00:09", "103"))
	a8 := joinedPair(l("00:00:10", "a8"), r("00:00:10", "104"))
	a0 := joinedPair(l("00:00:00", "a0"), nullSide)
	a3 := joinedPair(outLeft("2", "00:00:04", "a3"), nullSide)
	a4 := joinedPair(outLeft("NULL", "00:00:04", "a4"), nullSide)
	a6 := joinedPair(l("00:00:08", "a6"), nullSide)
	inner := append([]any{}, temporalScript...)
	inner[4] = optest.Check(optest.Emitted(0))
	optest.RunScriptCase(t, optest.ScriptCase{Name: "INNER", Schemas: intervalSchemas, Script: inner,
		Op: temporalOp(t, temporalConfig(JoinInner)), Want: []string{a1, a2, a5, a7, a8}, Late: 1, TimeCols: []int{1}})
	// (time, arrival) order: a0 (0), a1 (3), a3 and a4 (4), a2 (5), ...
	optest.RunScriptCase(t, optest.ScriptCase{Name: "LEFT", Schemas: intervalSchemas, Script: temporalScript,
		Op: temporalOp(t, temporalConfig(JoinLeft)), Want: []string{a0, a1, a3, a4, a2, a5, a6, a7, a8}, Late: 1,
		TimeCols: []int{1}})
}

// A right row below the watermark (a table's DELETE carries the time of the version it ends) takes effect at the
// watermark: for every left row not fired yet, and for none that fired.
func TestTemporalJoinLateRight(t *testing.T) {
	script := []any{
		optest.Right(jr(1, "00:00:01", 100)),
		optest.Left(jl(1, "00:00:05", "a1")),
		optest.AllWM("00:00:03"),
		rightKinds([][]any{jr(1, "00:00:01", 100)}, exec.Delete), // ends key 1 from 3: a1 (5) has not fired
		optest.Left(jl(1, "00:00:02.5", "late")),                 // a left row below the watermark is late
		optest.AllWM("00:00:06"),                                 // a1 fires: no version
		optest.Right(jr(1, "00:00:02", 200)),                     // counts from 6
		optest.Left(jl(1, "00:00:07", "a2")),                     // 200
		optest.Left(jl(1, "00:00:06", "a3")),                     // 200 (6 <= 6)
	}
	optest.RunScriptCase(t, optest.ScriptCase{Name: "late right", Schemas: intervalSchemas, Script: script,
		Op: temporalOp(t, temporalConfig(JoinLeft)), Late: 1, TimeCols: []int{1}, Want: []string{
			joinedPair(outLeft("1", "00:00:05", "a1"), nullSide),
			joinedPair(outLeft("1", "00:00:06", "a3"), outRight("1", "00:00:02", "200")),
			joinedPair(outLeft("1", "00:00:07", "a2"), outRight("1", "00:00:02", "200")),
		}})
}

// A residual condition is checked against the version found: a left row whose version fails it does not fall back
// to an older version.
func TestTemporalJoinResidual(t *testing.T) {
	cfg := temporalConfig(JoinLeft)
	cfg.Residual = callExpr(t, ">", colExpr(5, "b", arrow.PrimitiveTypes.Int64), expr64(101))
	script := []any{
		optest.Right(jr(1, "00:00:01", 102), jr(1, "00:00:05", 101)),
		optest.Left(jl(1, "00:00:03", "a1"), jl(1, "00:00:06", "a2")),
	}
	optest.RunScriptCase(t, optest.ScriptCase{Name: "residual", Schemas: intervalSchemas, Script: script,
		Op: temporalOp(t, cfg), Want: []string{
			joinedPair(outLeft("1", "00:00:03", "a1"), outRight("1", "00:00:01", "102")),
			joinedPair(outLeft("1", "00:00:06", "a2"), nullSide),
		}})
}

func TestTemporalJoinConfig(t *testing.T) {
	cfg := temporalConfig(JoinFull)
	if _, _, err := NewTemporalJoin(cfg); err == nil {
		t.Fatal("a FULL temporal join was accepted")
	}
	cfg = temporalConfig(JoinInner)
	cfg.RightTime = 2
	if _, _, err := NewTemporalJoin(cfg); err == nil {
		t.Fatal("a VARCHAR version time was accepted")
	}
}

// TestTemporalJoinModel compares the join with a brute-force model over the whole input: random versions (inserts,
// deletes, update pairs, out of order within the watermark's delay, some below it), random left rows, watermarks of
// each input advancing separately, and every batch shape with restores.
func TestTemporalJoinModel(t *testing.T) {
	seeds := uint64(6)
	var shapes []optest.Shape // all
	if testing.Short() {
		// Under make test's -race the full run takes minutes: two seeds, over the shapes that restore.
		seeds = 2
		shapes = []optest.Shape{{Batch: 1, Pebble: true, Restore: "every"}, {Batch: 3, Restore: "mid"}, {Batch: 0, Pebble: true, Restore: "every"}}
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 77))
		type ev struct {
			side     int
			key      any
			ts       int64 // seconds
			val      int64
			kind     exec.RowKind
			arrival  int
			wmAtArr  int64 // combined watermark at arrival, seconds
			fireStep int   // left: the watermark step that fires it
		}
		var script []any
		var evs []ev
		wm := [2]int64{-1 << 40, -1 << 40}
		combined := func() int64 { return min(wm[0], wm[1]) }
		clock := int64(10)
		step := 0
		var fired [][]int // per watermark step: the left events it fires
		var arrived []int // per watermark step: the events that arrived before it
		for n := 0; n < 40; n++ {
			switch rng.IntN(4) {
			case 0, 1: // a batch of one side
				side := rng.IntN(2)
				var rows [][]any
				var kinds []exec.RowKind
				for k := 1 + rng.IntN(4); k > 0; k-- {
					var key any = rng.IntN(3)
					if rng.IntN(10) == 0 {
						key = nil
					}
					ts := clock - 4 + rng.Int64N(6)
					e := ev{side: side, key: key, ts: ts, val: int64(len(evs)), kind: exec.Insert, arrival: len(evs),
						wmAtArr: combined()}
					if side == 1 {
						switch rng.IntN(5) {
						case 0:
							e.kind = exec.Delete
						case 1:
							// an update pair: a -U of some row, then the +U
							ub := e
							ub.kind = exec.UpdateBefore
							ub.val = -1
							evs = append(evs, ub)
							rows = append(rows, []any{key, optest.TestDay + secText(ts), int(ub.val)})
							kinds = append(kinds, exec.UpdateBefore)
							e.arrival = len(evs)
							e.kind = exec.UpdateAfter
						}
						rows = append(rows, []any{key, optest.TestDay + secText(ts), int(e.val)})
					} else {
						rows = append(rows, []any{key, optest.TestDay + secText(ts), "a" + strconv.Itoa(len(evs))})
					}
					kinds = append(kinds, e.kind)
					e.fireStep = -1
					evs = append(evs, e)
				}
				if side == 1 {
					script = append(script, optest.InputRows{In: 1, Rows: rows, Kinds: kinds})
				} else {
					script = append(script, optest.InputRows{In: 0, Rows: rows})
				}
			case 2: // time passes, one input's watermark follows
				clock += rng.Int64N(3)
				in := rng.IntN(3) - 1
				w := clock - 3
				script = append(script, optest.InputWM{In: in, WM: optest.TestDay + secText(w)})
				before := combined()
				for i := range wm {
					if in < 0 || in == i {
						wm[i] = max(wm[i], w)
					}
				}
				if c := combined(); c > before {
					fired = append(fired, nil)
					arrived = append(arrived, len(evs))
					for i := range evs {
						if evs[i].side == 0 && evs[i].fireStep < 0 && evs[i].ts >= evs[i].wmAtArr && evs[i].ts < c {
							evs[i].fireStep = step
							fired[step] = append(fired[step], i)
						}
					}
					step++
				}
			default:
				clock++
			}
		}
		// The end of input fires the rest.
		fired = append(fired, nil)
		arrived = append(arrived, len(evs))
		for i := range evs {
			if evs[i].side == 0 && evs[i].fireStep < 0 && evs[i].ts >= evs[i].wmAtArr {
				evs[i].fireStep = step
				fired[step] = append(fired[step], i)
			}
		}
		var want []string
		var late int64
		for i := range evs {
			if evs[i].side == 0 && evs[i].ts < evs[i].wmAtArr {
				late++
			}
		}
		for s, ids := range fired {
			slices.SortStableFunc(ids, func(a, b int) int { return cmp.Compare(evs[a].ts, evs[b].ts) })
			for _, i := range ids {
				l := evs[i]
				best := -1
				if l.key != nil {
					for k, r := range evs {
						// versions that arrived before this watermark step, of the key, in effect at l's time (a
						// version counts from its time or the watermark at its arrival, the later)
						eff := max(r.ts, r.wmAtArr)
						if r.side != 1 || r.kind == exec.UpdateBefore || r.key != l.key || eff > l.ts ||
							r.arrival >= arrived[s] {
							continue
						}
						if best < 0 || eff > max(evs[best].ts, evs[best].wmAtArr) || eff == max(evs[best].ts, evs[best].wmAtArr) && k > best {
							best = k
						}
					}
				}
				left := fmt.Sprintf("%s|%s|a%d", keyText(l.key), jt(secText(l.ts)), i)
				if best < 0 || evs[best].kind == exec.Delete {
					want = append(want, joinedPair(left, nullSide))
					continue
				}
				r := evs[best]
				want = append(want, joinedPair(left, fmt.Sprintf("%s|%s|%d", keyText(r.key), jt(secText(r.ts)), r.val)))
			}
		}
		matched := 0
		for _, w := range want {
			if !strings.HasSuffix(w, nullSide) {
				matched++
			}
		}
		if matched < 3 || matched == len(want) {
			t.Fatalf("seed %d: %d of %d left rows matched: the model test exercises too little", seed, matched, len(want))
		}
		optest.RunScriptCase(t, optest.ScriptCase{Name: fmt.Sprintf("seed%d", seed), Schemas: intervalSchemas,
			Script: script, Op: temporalOp(t, temporalConfig(JoinLeft)), Want: want, Late: late, TimeCols: []int{1},
			Shapes: shapes})
	}
}

func keyText(k any) string {
	if k == nil {
		return "NULL"
	}
	return strconv.Itoa(k.(int))
}

// secText is a test time of s seconds after midnight (negative ones are never generated: clock - 4 >= 6).
func secText(s int64) string { return fmt.Sprintf("%02d:%02d:%02d", s/3600, s/60%60, s%60) }

func expr64(v int64) expr.Expr { return expr.Int64(v) }
