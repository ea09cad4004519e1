package agg

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/optest"
)

// Windows over a TIMESTAMP WITH TIME ZONE in a zone are laid out on its wall clock: a daily TUMBLE in Berlin is a
// local day, 23 hours long on 2026-03-29 (02:00 -> 03:00) and 25 on 2026-10-25 (03:00 -> 02:00). Bounds are
// printed as instants in UTC (+00): local midnight is 23:00 or 22:00 UTC.
func TestWindowZoned(t *testing.T) {
	berlin, err := expr.LoadZone("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	in := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: expr.TypeTimestampTZ, Nullable: true},
	}, nil)
	rows := [][]any{
		{1, "2026-03-28 22:30:00"}, // 23:30 local, 03-28
		{1, "2026-03-28 23:30:00"}, // 00:30 local, 03-29
		{1, "2026-03-29 21:30:00"}, // 23:30 CEST, 03-29
		{2, "2026-10-24 22:10:00"}, // 00:10 CEST, 10-25
		{2, "2026-10-25 22:50:00"}, // 23:50 CET, 10-25
	}
	for _, c := range []struct {
		name string
		cfg  WindowAggConfig
		want []string
	}{
		{"daily tumble", WindowAggConfig{Kind: WindowTumble, TimeCol: 1, Size: 24 * 3600 * sec,
			Aggs: []AggSpec{{Func: AggCountStar, Arg: -1, Filter: -1}}, Zone: berlin}, []string{
			"2026-03-27 23:00:00+00|2026-03-28 23:00:00+00|1",
			"2026-03-28 23:00:00+00|2026-03-29 22:00:00+00|2",
			"2026-10-24 22:00:00+00|2026-10-25 23:00:00+00|2",
		}},
		{"cumulate by 12 hours over a day", WindowAggConfig{Kind: WindowCumulate, TimeCol: 1, Step: 12 * 3600 * sec,
			Size: 24 * 3600 * sec, Aggs: []AggSpec{{Func: AggCountStar, Arg: -1, Filter: -1}}, Zone: berlin}, []string{
			"2026-03-27 23:00:00+00|2026-03-28 23:00:00+00|1",
			"2026-03-28 23:00:00+00|2026-03-29 10:00:00+00|1", // local noon is 10:00 UTC after the change
			"2026-03-28 23:00:00+00|2026-03-29 22:00:00+00|2",
			"2026-10-24 22:00:00+00|2026-10-25 11:00:00+00|1",
			"2026-10-24 22:00:00+00|2026-10-25 23:00:00+00|2",
		}},
	} {
		f, _, err := NewWindowAggregate(c.cfg, in)
		optest.Must(t, err)
		h := optest.NewHarness(t, f, false, in)
		optest.Must(t, h.Open("", 0))
		optest.Must(t, h.Process(0, rows, nil))
		optest.Must(t, h.Finish())
		optest.Must(t, h.Close())
		got := slices.Sorted(slices.Values(h.Rows))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got  %q\n want %q", c.name, got, c.want)
		}
		// The same windows without a zone are UTC days.
		c.cfg.Zone = nil
		f, _, _ = NewWindowAggregate(c.cfg, in)
		h = optest.NewHarness(t, f, false, in)
		optest.Must(t, h.Open("", 0))
		optest.Must(t, h.Process(0, rows, nil))
		optest.Must(t, h.Finish())
		optest.Must(t, h.Close())
		if slices.Equal(slices.Sorted(slices.Values(h.Rows)), c.want) {
			t.Errorf("%s: UTC windows equal the zoned ones", c.name)
		}
	}
	// The window assignment (a TVF without GROUP BY) lays them out the same way.
	f, out, err := NewWindowAssign(WindowAggConfig{Kind: WindowTumble, TimeCol: 1, Size: 24 * 3600 * sec, Zone: berlin}, in)
	optest.Must(t, err)
	if !expr.IsTimestampTZ(out.Field(2).Type) {
		t.Fatalf("window_start is %s", out.Field(2).Type)
	}
	h := optest.NewHarness(t, f, false, in)
	optest.Must(t, h.Open("", 0))
	optest.Must(t, h.Process(0, rows[2:3], nil))
	optest.Must(t, h.Close())
	if want := []string{"1|2026-03-29 21:30:00+00|2026-03-28 23:00:00+00|2026-03-29 22:00:00+00"}; !slices.Equal(h.Rows, want) {
		t.Errorf("window assign: %q, want %q", h.Rows, want)
	}
}
