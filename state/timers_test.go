package state

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

type fired struct {
	key string
	ts  int64
}

func collect(t *testing.T, ts *TimerService, wm int64) []fired {
	t.Helper()
	var out []fired
	if err := ts.AdvanceTo(wm, func(k []byte, at int64) error {
		out = append(out, fired{string(k), at})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Pins: timers firing out of (ts, key) order, twice, after Delete, or not at all when registered from inside fire.
func TestTimerOrderDeleteAndReentrantRegister(t *testing.T) {
	b, _ := OpenMemory(Options{})
	ts, err := LoadTimers(b)
	if err != nil {
		t.Fatal(err)
	}
	ts.Register(1, []byte("b"), 10)
	ts.Register(1, []byte("a"), 10)
	ts.Register(2, []byte("a"), -5)
	ts.Register(2, []byte("a"), -5) // duplicate
	ts.Register(3, []byte("c"), 7)
	ts.Register(3, []byte("d"), 8)
	ts.Delete(3, []byte("d"), 8)
	ts.Register(4, []byte("e"), 20)
	if ts.Len() != 5 {
		t.Fatalf("Len = %d, want 5", ts.Len())
	}
	var got []fired
	err = ts.AdvanceTo(10, func(k []byte, at int64) error {
		got = append(got, fired{string(k), at})
		if string(k) == "c" {
			ts.Register(5, []byte("z"), 9) // due already: fires in this same advance, in order
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []fired{{"a", -5}, {"c", 7}, {"z", 9}, {"a", 10}, {"b", 10}}
	if !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if again := collect(t, ts, 10); len(again) != 0 {
		t.Fatalf("second advance to the same watermark fired %v", again)
	}
	boom := errors.New("boom")
	if err := ts.AdvanceTo(30, func([]byte, int64) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("AdvanceTo error = %v", err)
	}
	if got := collect(t, ts, 30); !slices.Equal(got, []fired{{"e", 20}}) {
		t.Fatalf("timer whose fire failed: got %v, want it to fire on the next advance", got)
	}
}

// Pins: a restore re-firing timers that fired before the checkpoint, or losing ones still due.
func TestTimersFireOnceAcrossRestore(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "0")
	for _, kind := range backendKinds[:2] {
		t.Run(kind.name, func(t *testing.T) {
			root := t.TempDir()
			b := kind.open(t, root, "")
			defer b.Close()
			ts, _ := LoadTimers(b)
			for i := 1; i <= 10; i++ {
				ts.Register(i%4, []byte(fmt.Sprintf("k%d", i)), int64(i))
			}
			ts.Register(0, []byte("deleted"), 7)
			before := collect(t, ts, 5) // 1..5 fire before the barrier
			ts.Delete(0, []byte("deleted"), 7)
			ts.Flush()
			s, _ := b.Capture(1)
			ts.Register(0, []byte("late"), 6)            // after the barrier: not in checkpoint 1
			if got := collect(t, ts, 8); len(got) != 4 { // 6,late,7,8: output the restore rolls back
				t.Fatalf("fired %v after the barrier", got)
			}
			ts.Flush()
			dir := filepath.Join(root, "chk-1")
			if err := s.Persist(dir); err != nil {
				t.Fatal(err)
			}

			r := kind.open(t, filepath.Join(root, "r"), dir)
			defer r.Close()
			rts, err := LoadTimers(r)
			if err != nil {
				t.Fatal(err)
			}
			after := collect(t, rts, 100)
			all := append(before, after...)
			var want []fired
			for i := 1; i <= 10; i++ {
				want = append(want, fired{fmt.Sprintf("k%d", i), int64(i)})
			}
			if !slices.Equal(all, want) {
				t.Fatalf("fired before checkpoint %v, after restore %v; want each of k1..k10 once, in order", before, after)
			}
		})
	}
}

// Pins: Flush leaving stored timers different from live ones after any mix of register, delete and fire.
func TestTimerFlushMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	b, _ := OpenMemory(Options{})
	ts, _ := LoadTimers(b)
	model := map[fired]bool{}
	wm := int64(0)
	for step := 0; step < 3000; step++ {
		n := rng.IntN(20)
		k := fired{fmt.Sprintf("k%d", n), wm + int64(rng.IntN(30))}
		switch r := rng.IntN(10); {
		case r < 5:
			ts.Register(n%3, []byte(k.key), k.ts) // a key's key group is a function of the key
			model[k] = true
		case r < 7:
			ts.Delete(n%3, []byte(k.key), k.ts)
			delete(model, k)
		case r < 9:
			wm += int64(rng.IntN(5))
			var due []fired
			for m := range model {
				if m.ts <= wm {
					due = append(due, m)
					delete(model, m)
				}
			}
			slices.SortFunc(due, func(a, b fired) int { return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.key, b.key)) })
			if got := collect(t, ts, wm); !slices.Equal(got, due) {
				t.Fatalf("step %d: fired %v, want %v", step, got, due)
			}
		default:
			ts.Flush()
			reloaded, err := LoadTimers(b)
			if err != nil {
				t.Fatal(err)
			}
			if reloaded.Len() != len(model) {
				t.Fatalf("step %d: stored %d timers, live %d", step, reloaded.Len(), len(model))
			}
			for m := range model {
				if _, ok := reloaded.live[timerID(appendTimerID(nil, m.ts, []byte(m.key)))]; !ok {
					t.Fatalf("step %d: timer %v not stored", step, m)
				}
			}
		}
	}
}

// Pins: Register allocating on the per-row path when the timer exists already (one timer per key and window).
func TestTimerReregisterDoesNotAllocate(t *testing.T) {
	b, _ := OpenMemory(Options{})
	ts, _ := LoadTimers(b)
	key := []byte("some-key")
	ts.Register(1, key, 100)
	if n := testing.AllocsPerRun(100, func() { ts.Register(1, key, 100) }); n != 0 {
		t.Fatalf("re-registering an existing timer allocates %v times", n)
	}
}
