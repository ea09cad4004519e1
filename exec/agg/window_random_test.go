package agg

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/clinksql/clinksql/exec/optest"
)

// quickShapes leaves out the slow combination (a Pebble restore at every barrier) for the many random cases.
var quickShapes = []optest.Shape{
	{Batch: 1, Restore: "every"}, {Batch: 3, Restore: "every"}, {Batch: 0},
	{Batch: 1, Pebble: true, Restore: "mid"},
}

// TestWindowRandom checks every window kind, keyed and global, against a direct model on random rows whose event
// times are out of order by less than the watermark delay (so no row is late and every batching must agree).
func TestWindowRandom(t *testing.T) {
	kinds := []WindowAggConfig{
		{Kind: WindowTumble, Size: 7 * sec},
		{Kind: WindowTumble, Size: 7 * sec, Offset: 2 * sec},
		{Kind: WindowHop, Slide: 3 * sec, Size: 7 * sec},
		{Kind: WindowHop, Slide: 2 * sec, Size: 6 * sec},
		{Kind: WindowCumulate, Step: 2 * sec, Size: 6 * sec},
		{Kind: WindowSession, Gap: 3 * sec},
	}
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		const delay = 4 * sec
		var input []any
		for i := 0; i < 60; i++ {
			ts := int64(i)*sec/2 + rng.Int64N(delay-1) // disorder < delay
			var k any = rng.IntN(4)
			if rng.IntN(10) == 0 {
				k = nil
			}
			input = append(input, lateEv(k, ts, rng.IntN(100)-20))
		}
		for _, keyed := range []bool{true, false} {
			for _, cfg := range kinds {
				cfg.TimeCol, cfg.Aggs = colTS, countSum
				if keyed {
					cfg.Keys = []int{colK}
				}
				name := fmt.Sprintf("%s/size=%d/slide=%d/step=%d/gap=%d/offset=%d/keyed=%v/seed=%d", cfg.Kind,
					cfg.Size/sec, cfg.Slide/sec, cfg.Step/sec, cfg.Gap/sec, cfg.Offset/sec, keyed, seed)
				optest.RunCase(t, optest.Case{Name: name, Schema: windowEvents, Input: input, TimeCol: colTS,
					Delay: time.Duration(delay) * time.Microsecond, Op: windowOp(t, cfg, windowEvents),
					Want: modelWindows(cfg, input), Shapes: quickShapes})
			}
		}
	}
}

// modelWindows computes COUNT(*), SUM(v) per window and key straight from the definitions.
func modelWindows(cfg WindowAggConfig, input []any) []string {
	type gkey struct {
		start, end int64
		null       bool
		k          int
	}
	type acc struct{ n, sum int64 }
	accs := map[gkey]*acc{}
	add := func(g gkey, v int) {
		a := accs[g]
		if a == nil {
			a = &acc{}
			accs[g] = a
		}
		a.n++
		a.sum += int64(v)
	}
	floorTo := func(t, m int64) int64 { return t - ((t%m)+m)%m }
	type row struct {
		ts   int64
		null bool
		k, v int
	}
	var rows []row
	for _, it := range input {
		r := it.([]any)
		x := row{ts: int64(r[colTS].(int)), v: r[colV].(int)}
		if cfg.Keys == nil || r[colK] == nil {
			x.null = true
		} else {
			x.k = r[colK].(int)
		}
		rows = append(rows, x)
	}
	for _, r := range rows {
		g := gkey{null: r.null, k: r.k}
		switch cfg.Kind {
		case WindowTumble:
			g.start = floorTo(r.ts-cfg.Offset, cfg.Size) + cfg.Offset
			g.end = g.start + cfg.Size
			add(g, r.v)
		case WindowHop:
			for s := floorTo(r.ts, cfg.Slide) - (cfg.Size/cfg.Slide+2)*cfg.Slide; s <= r.ts; s += cfg.Slide {
				if s <= r.ts && r.ts < s+cfg.Size {
					g.start, g.end = s, s+cfg.Size
					add(g, r.v)
				}
			}
		case WindowCumulate:
			p := floorTo(r.ts, cfg.Size)
			for e := p + cfg.Step; e <= p+cfg.Size; e += cfg.Step {
				if e > r.ts {
					g.start, g.end = p, e
					add(g, r.v)
				}
			}
		}
	}
	if cfg.Kind == WindowSession { // per key: sort by time, chain rows whose [ts, ts+gap) touch
		sorted := slices.Clone(rows)
		slices.SortStableFunc(sorted, func(a, b row) int {
			return cmp.Or(cmp.Compare(boolRank(a.null), boolRank(b.null)), cmp.Compare(a.k, b.k), cmp.Compare(a.ts, b.ts))
		})
		var cur *gkey
		var members []int
		flush := func() {
			for _, v := range members {
				add(*cur, v)
			}
			members = nil
		}
		for _, r := range sorted {
			if cur != nil && cur.null == r.null && cur.k == r.k && r.ts <= cur.end {
				cur.end = max(cur.end, r.ts+cfg.Gap)
				members = append(members, r.v)
				continue
			}
			if cur != nil {
				flush()
			}
			cur = &gkey{start: r.ts, end: r.ts + cfg.Gap, null: r.null, k: r.k}
			members = []int{r.v}
		}
		if cur != nil {
			flush()
		}
	}
	keys := make([]gkey, 0, len(accs))
	for g := range accs {
		keys = append(keys, g)
	}
	slices.SortFunc(keys, func(a, b gkey) int {
		return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.start, b.start),
			cmp.Compare(boolRank(!a.null), boolRank(!b.null)), cmp.Compare(a.k, b.k))
	})
	tsText := func(us int64) string { return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.999999") }
	var out []string
	for _, g := range keys {
		a := accs[g]
		s := fmt.Sprintf("%s|%s|%d|%d", tsText(g.start), tsText(g.end), a.n, a.sum)
		if cfg.Keys != nil {
			k := "NULL"
			if !g.null {
				k = fmt.Sprint(g.k)
			}
			s = k + "|" + s
		}
		out = append(out, s)
	}
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
