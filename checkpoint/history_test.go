package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clinksql/clinksql/state"
)

// The history keeps the newest N records and totals over every record, and a reopen (a process restart) reads
// both back as they were written; a smaller size keeps the newest of them.
func TestNewHistoryKeepsLastNAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	h, err := OpenHistory(nil, dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for id := uint64(1); id <= 5; id++ {
		r := Record{ID: id, Mode: Mode(id % 2), Trigger: t0.Add(time.Duration(id) * time.Second), Duration: 30 * time.Millisecond,
			AlignWait: time.Millisecond, Bytes: 2000, InflightBytes: int64(id % 2 * 500), Outcome: Completed}
		if id == 4 {
			r.Outcome, r.Reason = Failed, "participant x-0: disk full"
		}
		if err := h.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Update(func(t *Totals) { t.Restarts = map[string]int64{"failure": 2}; t.StartedAt = t0 }); err != nil {
		t.Fatal(err)
	}
	check := func(h *History, ids ...uint64) {
		t.Helper()
		recs := h.Records()
		if len(recs) != len(ids) {
			t.Fatalf("%d records %+v, want ids %v", len(recs), recs, ids)
		}
		for i, id := range ids {
			if recs[i].ID != id || !recs[i].Trigger.Equal(t0.Add(time.Duration(id)*time.Second)) {
				t.Fatalf("record %d: %+v, want id %d", i, recs[i], id)
			}
		}
		if recs[len(recs)-2].Outcome != Failed || recs[len(recs)-2].Reason != "participant x-0: disk full" {
			t.Fatalf("record of checkpoint 4: %+v", recs[len(recs)-2])
		}
		tot := h.Totals()
		if tot.Outcomes(Completed) != 4 || tot.Outcomes(Failed) != 1 || tot.Checkpoints[Unaligned][Completed] != 3 ||
			tot.InflightBytes != 1500 || tot.Duration.Count != 4 || tot.Size.Count != 4 || tot.RestartCount() != 2 ||
			!tot.StartedAt.Equal(t0) {
			t.Fatalf("totals %+v", tot)
		}
	}
	check(h, 3, 4, 5)
	reopened, err := OpenHistory(nil, dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	check(reopened, 3, 4, 5)
	smaller, err := OpenHistory(nil, dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	check(smaller, 4, 5)
}

// A damaged history is refused with an XX001 error naming the file, never silently started afresh: one flipped
// byte (the checksum), and a frame that is intact around something that is not a history.
func TestNewHistoryCorruptFileRefused(t *testing.T) {
	dir := t.TempDir()
	h, err := OpenHistory(nil, dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Add(Record{ID: 1, Outcome: Completed}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, HistoryFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what string) {
		t.Helper()
		_, err := OpenHistory(nil, dir, 10)
		c, ok := state.IsCorrupt(err)
		if !ok || c.Path != path || c.SQLState() != "XX001" {
			t.Fatalf("%s: %v, want a corruption of %s", what, err, path)
		}
		if _, _, err := ReadHistory(nil, dir); !errors.As(err, &c) {
			t.Fatalf("%s: ReadHistory: %v", what, err)
		}
	}
	flipped := append([]byte(nil), data...)
	flipped[len(flipped)/2] ^= 0x10
	if err := os.WriteFile(path, flipped, 0o644); err != nil {
		t.Fatal(err)
	}
	refused("flipped byte")
	if err := os.WriteFile(path, state.Frame([]byte(`{"Records": 7}`)), 0o644); err != nil {
		t.Fatal(err)
	}
	refused("not a history")
}

// The coordinator records each checkpoint once its outcome is decided: a completed one with what its participants
// reported (bytes summed, align wait the max), a failed one with why.
func TestNewCoordinatorRecordsHistory(t *testing.T) {
	var hist *History
	h := newHarness(t, func(c *Config) {
		var err error
		if hist, err = OpenHistory(nil, c.Dir, 10); err != nil {
			t.Fatal(err)
		}
		c.History = hist
	})
	h.c.Register("a")
	h.c.Register("b")
	id := h.trigger()
	h.c.Report(id, "a", AckStats{Bytes: 100, AlignWait: 3 * time.Millisecond})
	h.c.Acknowledge(id, "a", nil)
	h.c.Report(id, "b", AckStats{Bytes: 50, InflightBytes: 20, AlignWait: time.Millisecond})
	h.c.Acknowledge(id, "b", nil)
	if err := h.wait(id); err != nil {
		t.Fatal(err)
	}
	id2 := h.trigger()
	h.c.Acknowledge(id2, "a", errors.New("disk full"))
	<-h.failed
	h.c.Stop()
	h.c.Drain()
	recs := hist.Records()
	if len(recs) != 2 || recs[0].ID != id || recs[0].Outcome != Completed || recs[0].Bytes != 150 || recs[0].InflightBytes != 20 ||
		recs[0].AlignWait != 3*time.Millisecond || recs[0].Duration <= 0 || recs[0].Trigger.IsZero() {
		t.Fatalf("records %+v", recs)
	}
	if recs[1].ID != id2 || recs[1].Outcome != Failed || recs[1].Reason == "" {
		t.Fatalf("record of the failed checkpoint: %+v", recs[1])
	}
}
