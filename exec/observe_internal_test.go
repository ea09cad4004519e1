package exec

import (
	"testing"
	"time"
)

// Rates are the change from the oldest of the last samples to the figures read now, over the time between; a
// rewind forgets the samples (no negative rate across it), and the ring keeps only the last sampleKeep.
func TestNewSubtaskRatesFromSamples(t *testing.T) {
	st := &subStats{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if in, out, busy, bp := st.rates(st.current(t0)); in != 0 || out != 0 || busy != 0 || bp != 0 {
		t.Fatalf("rates without a sample: %v %v %v %v", in, out, busy, bp)
	}
	for i := 0; i < sampleKeep+3; i++ { // the oldest kept is sample 3, at t0+3s with 300 rows in
		st.takeSample(t0.Add(time.Duration(i) * time.Second))
		st.rowsIn.Add(100)
		st.rowsOut.Add(10)
		st.busy.Add(int64(500 * time.Millisecond))
		st.blocked.Add(int64(250 * time.Millisecond))
	}
	now := t0.Add(10 * time.Second) // 7 s after the oldest kept sample; 500 rows in since it
	in, out, busy, bp := st.rates(st.current(now))
	if in != 500.0/7 || out != 50.0/7 || busy != 2.5/7 || bp != 1.25/7 {
		t.Fatalf("rates %v %v %v %v, want %v %v %v %v", in, out, busy, bp, 500.0/7, 50.0/7, 2.5/7, 1.25/7)
	}
	st.rowsIn.Store(0)
	st.resetSamples()
	if in, _, _, _ := st.rates(st.current(now)); in != 0 {
		t.Fatalf("rate %v after a rewind, want 0", in)
	}
}

// A runner/counts value reads back as staged, and a checkpoint of an older build (three counts) with RowsIn 0.
func TestSubtaskCountsRoundTrip(t *testing.T) {
	c := SubtaskCounts{RowsOut: 7, Late: 2, BadValues: 3, RowsIn: 11}
	got, err := DecodeCounts(c.encode())
	if err != nil || got != c {
		t.Fatalf("got %+v, %v; want %+v", got, err, c)
	}
	old := c
	old.RowsIn = 0
	if got, err := DecodeCounts(c.encode()[:24]); err != nil || got != old {
		t.Fatalf("older form: got %+v, %v; want %+v", got, err, old)
	}
	if _, err := DecodeCounts(c.encode()[:16]); err == nil {
		t.Fatal("16 bytes decoded")
	}
}
