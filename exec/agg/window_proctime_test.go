package agg

import (
	"slices"
	"testing"
	"time"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/optest"
)

// TestProcTimeWindow drives a processing-time TUMBLE by a manual clock: rows go to the window of the clock at
// their arrival whatever their time column holds (here far in the past, or NULL), the event watermark fires
// nothing, the clock passing a window's end does; an open window survives a checkpoint and restore, and one whose
// end passed while the operator was down fires at once after the restore; end of input fires the rest.
func TestProcTimeWindow(t *testing.T) {
	for _, pebble := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "pebble"}[pebble], func(t *testing.T) {
			cfg := WindowAggConfig{Kind: WindowTumble, TimeCol: colTS, Size: 10 * sec, Keys: []int{colK}, Aggs: countSum,
				ProcTime: true}
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := exec.NewManualClock(t0.Add(time.Second))
			h := optest.NewHarness(t, windowOp(t, cfg, windowEvents), pebble, windowEvents)
			h.Clock = clock
			optest.Must(t, h.Open("", 0))
			step := func(rows ...[]any) {
				t.Helper()
				optest.Must(t, h.Process(0, rows, nil))
			}
			fire := func(wantCalls int) {
				t.Helper()
				n, err := h.FireTimers()
				optest.Must(t, err)
				if n != wantCalls {
					t.Fatalf("%d timer calls at %s, want %d", n, clock.Now(), wantCalls)
				}
			}
			// At 00:00:01 and 00:00:05: window [00:00:00, 00:00:10).
			step(ev(1, "1999-01-01 00:00:00", 10), ev(2, "2030-01-01 00:00:00", 5))
			clock.Set(t0.Add(5 * time.Second))
			step([]any{1, nil, 7, nil, nil, nil})
			optest.Must(t, h.Watermark(0, optest.GoTimestamp("2040-01-01 00:00:00"))) // event time: nothing fires
			fire(0)
			if len(h.Rows) != 0 {
				t.Fatalf("fired before its end: %v", h.Rows)
			}
			clock.Set(t0.Add(10 * time.Second)) // the end: [0, 10) fires (end <= now)
			fire(1)
			// At 00:00:12: window [00:00:10, 00:00:20), open across a checkpoint and restore.
			clock.Set(t0.Add(12 * time.Second))
			step(ev(1, "1999-01-01 00:00:00", 1), ev(3, "1999-01-01 00:00:00", 2))
			fire(0)
			optest.Must(t, h.Barrier(true))
			// The restored operator finds the window and its timer: not due at 00:00:19, due at once at 00:00:35.
			clock.Set(t0.Add(19 * time.Second))
			fire(0)
			clock.Set(t0.Add(35 * time.Second))
			fire(1)
			step(ev(2, "1999-01-01 00:00:00", 4)) // [00:00:30, 00:00:40), fired by the end of input
			optest.Must(t, h.Finish())
			optest.Must(t, h.Close())
			// By hand: [0,10): key 1 rows 10 and 7 (count 2, sum 17), key 2 row 5; [10,20): key 1 row 1, key 3
			// row 2; [30,40): key 2 row 4.
			want := []string{
				"1|" + day + "00:00:00|" + day + "00:00:10|2|17",
				"2|" + day + "00:00:00|" + day + "00:00:10|1|5",
				"1|" + day + "00:00:10|" + day + "00:00:20|1|1",
				"3|" + day + "00:00:10|" + day + "00:00:20|1|2",
				"2|" + day + "00:00:30|" + day + "00:00:40|1|4",
			}
			if !slices.Equal(h.Rows, want) {
				t.Fatalf("got\n%v\nwant\n%v", h.Rows, want)
			}
			if h.Late.Load() != 0 || h.Errs.Load() != 0 {
				t.Fatalf("late %d, errors %d: a processing-time window has neither", h.Late.Load(), h.Errs.Load())
			}
		})
	}
}

// TestProcTimeWindowClockBack: a clock that went back (a wall clock reset across a restart) puts rows in the
// window after the time already fired, never in a fired one.
func TestProcTimeWindowClockBack(t *testing.T) {
	cfg := WindowAggConfig{Kind: WindowTumble, TimeCol: colTS, Size: 10 * sec, Keys: []int{colK}, Aggs: countSum, ProcTime: true}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := exec.NewManualClock(t0.Add(time.Second))
	h := optest.NewHarness(t, windowOp(t, cfg, windowEvents), false, windowEvents)
	h.Clock = clock
	optest.Must(t, h.Open("", 0))
	optest.Must(t, h.Process(0, [][]any{[]any{1, nil, 1, nil, nil, nil}}, nil))
	clock.Set(t0.Add(10 * time.Second))
	_, err := h.FireTimers()
	optest.Must(t, err)
	optest.Must(t, h.Barrier(true))
	h.Clock = exec.NewManualClock(t0.Add(3 * time.Second)) // back before the end fired
	optest.Must(t, h.Barrier(true))
	optest.Must(t, h.Process(0, [][]any{[]any{1, nil, 2, nil, nil, nil}}, nil))
	optest.Must(t, h.Finish())
	optest.Must(t, h.Close())
	want := []string{
		"1|" + day + "00:00:00|" + day + "00:00:10|1|1",
		"1|" + day + "00:00:10|" + day + "00:00:20|1|2",
	}
	if !slices.Equal(h.Rows, want) {
		t.Fatalf("got %v, want %v", h.Rows, want)
	}
}

// TestProcTimeWindowKinds: CUMULATE and SESSION on processing time. Rows arrive at 1, 3 and 14 (seconds); by hand:
// CUMULATE(step 5 s, size 10 s) gives [0, 5) with the rows at 1 and 3, [0, 10) with them too, [10, 15) with the
// row at 14 and [10, 20) with it (each fired when the clock passes its end: 5, 10, 15, end of input); SESSION(gap
// 5 s) per key gives key 1 [1, 8) (rows at 1 and 3: 3 + 5 = 8) and [14, 19) for the row at 14.
func TestProcTimeWindowKinds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		cfg  WindowAggConfig
		want []string
	}{
		{"cumulate", WindowAggConfig{Kind: WindowCumulate, Step: 5 * sec, Size: 10 * sec}, []string{
			"1|" + day + "00:00:00|" + day + "00:00:05|2|3",
			"1|" + day + "00:00:00|" + day + "00:00:10|2|3",
			"1|" + day + "00:00:10|" + day + "00:00:15|1|4",
			"1|" + day + "00:00:10|" + day + "00:00:20|1|4",
		}},
		{"session", WindowAggConfig{Kind: WindowSession, Gap: 5 * sec}, []string{
			"1|" + day + "00:00:01|" + day + "00:00:08|2|3",
			"1|" + day + "00:00:14|" + day + "00:00:19|1|4",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.TimeCol, cfg.Keys, cfg.Aggs, cfg.ProcTime = colTS, []int{colK}, countSum, true
			clock := exec.NewManualClock(t0.Add(time.Second))
			h := optest.NewHarness(t, windowOp(t, cfg, windowEvents), false, windowEvents)
			h.Clock = clock
			optest.Must(t, h.Open("", 0))
			at := func(s, v int) {
				t.Helper()
				clock.Set(t0.Add(time.Duration(s) * time.Second))
				_, err := h.FireTimers()
				optest.Must(t, err)
				optest.Must(t, h.Process(0, [][]any{ev(1, "1999-01-01 00:00:00", v)}, nil))
			}
			at(1, 1)
			at(3, 2)
			optest.Must(t, h.Barrier(true))
			at(14, 4)
			optest.Must(t, h.Finish())
			optest.Must(t, h.Close())
			if !slices.Equal(h.Rows, tc.want) {
				t.Fatalf("got\n%v\nwant\n%v", h.Rows, tc.want)
			}
		})
	}
}
