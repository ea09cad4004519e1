package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/clinksql/clinksql/state"
)

// Seed: the coordinator "seeds a per-checkpoint confirmation set from the tracked tasks at broadcast time, writes
// a CONFIRMED-<id> marker beside COMPLETED-<id> once it drains": one sink subtask that did not confirm (its
// commit failed) keeps the checkpoint unconfirmed, and a confirmation of an id never broadcast counts for nothing.
func TestConfirmedOnlyWhenEverySinkSubtaskConfirmed(t *testing.T) {
	var h *harness
	confirmed := func(id uint64) bool {
		_, err := os.Stat(ConfirmedPath(h.dir, id))
		return err == nil
	}
	h = newHarness(t, func(c *Config) {
		c.Confirmers = []ParticipantID{"sink-0", "sink-1"}
		c.OnComplete = func(id uint64) error {
			if err := h.c.Confirm(id+100, "sink-0"); err != nil { // never broadcast: ignored
				t.Error(err)
			}
			if err := h.c.Confirm(id, "sink-0"); err != nil {
				t.Error(err)
			}
			if confirmed(id) {
				t.Errorf("CONFIRMED-%d written before sink-1 confirmed", id)
			}
			if id == 1 { // sink-1's commit of 1 failed: it never confirms
				return nil
			}
			return h.c.Confirm(id, "sink-1")
		}
	})
	h.c.Register("sink-0")
	h.c.Register("sink-1")
	for range 2 {
		id := h.trigger()
		h.ackAll(id, "sink-0", "sink-1")
		if err := h.wait(id); err != nil {
			t.Fatal(err)
		}
	}
	if confirmed(1) || !confirmed(2) {
		t.Fatalf("confirmed 1: %v, 2: %v; want only 2", confirmed(1), confirmed(2))
	}
	if err := VerifyConfirmed(nil, h.dir, 2); err != nil {
		t.Fatal(err)
	}
	if ids, err := ConfirmedIDs(nil, h.dir); err != nil || !slices.Equal(ids, []uint64{2}) {
		t.Fatalf("ConfirmedIDs = %v, %v", ids, err)
	}
	if confirmed(101) || confirmed(102) {
		t.Fatal("a confirmation of an id never broadcast wrote a marker")
	}
}

// Seed: "CommitCheckpoint also carries a retention floor so no worker purges the confirmed restore target while
// newer checkpoints sit completed but unconfirmed"; "Workers prune receipts in the same retention sweep that
// purges superseded checkpoints, never below the retain floor".
func TestRetentionKeepsTheConfirmedRestoreTarget(t *testing.T) {
	var h *harness
	confirm := map[uint64]bool{1: true, 4: true} // 2 and 3 complete unconfirmed
	h = newHarness(t, func(c *Config) {
		c.Retain = 1
		c.Confirmers = []ParticipantID{"sink-0"}
		c.OnComplete = func(id uint64) error {
			if err := WriteStagedHandle(nil, ReceiptPath(h.dir, "sink", 0, id), StagedHandle{ID: id, Participant: "sink-0"}); err != nil {
				return err
			}
			if confirm[id] {
				return h.c.Confirm(id, "sink-0")
			}
			return nil
		}
	})
	h.c.Register("sink-0")
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	step := func() uint64 {
		id := h.trigger()
		h.ackAll(id, "sink-0")
		if err := h.wait(id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	for range 3 {
		step()
	}
	// 3 is the newest completed (Retain 1), but 1 is the restore target: it and everything above it stay.
	for id := uint64(1); id <= 3; id++ {
		if !exists(MarkerPath(h.dir, id)) || !exists(chkDir(h.dir, id)) || !exists(ReceiptPath(h.dir, "sink", 0, id)) {
			t.Fatalf("checkpoint %d (marker, files or receipt) purged while 1 is the newest confirmed", id)
		}
	}
	if !exists(ConfirmedPath(h.dir, 1)) {
		t.Fatal("CONFIRMED-1 purged")
	}
	step() // 4 confirmed: the floor moves to 4
	for id := uint64(1); id <= 3; id++ {
		if exists(MarkerPath(h.dir, id)) || exists(chkDir(h.dir, id)) || exists(ReceiptPath(h.dir, "sink", 0, id)) {
			t.Fatalf("checkpoint %d below the floor not purged", id)
		}
	}
	if exists(ConfirmedPath(h.dir, 1)) {
		t.Fatal("CONFIRMED-1 below the floor not purged")
	}
	if !exists(ReceiptPath(h.dir, "sink", 0, 4)) || !exists(ConfirmedPath(h.dir, 4)) {
		t.Fatal("the floor's own receipt or marker purged")
	}
}

// Seed: "A recovered or resumed job numbers its new checkpoints above every checkpoint id with a durable record
// in its directory - COMPLETED-/CONFIRMED- markers AND every snapshot file": CONFIRMED markers, commit receipts
// and unresolved markers name ids too.
func TestNextIDCountsConfirmedMarkersAndReceipts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkpoints")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteConfirmed(nil, dir, 7); err != nil {
		t.Fatal(err)
	}
	if id, err := NextID(nil, dir); err != nil || id != 8 {
		t.Fatalf("NextID = %d, %v; want 8 (CONFIRMED-7)", id, err)
	}
	if err := WriteStagedHandle(nil, ReceiptPath(dir, "k", 1, 9), StagedHandle{ID: 9, Participant: "k-1"}); err != nil {
		t.Fatal(err)
	}
	if id, err := NextID(nil, dir); err != nil || id != 10 {
		t.Fatalf("NextID = %d, %v; want 10 (receipt 9)", id, err)
	}
	if err := WriteStagedHandle(nil, UnresolvedPath(dir, "k", 0, 12), StagedHandle{ID: 12, Participant: "k-0"}); err != nil {
		t.Fatal(err)
	}
	if id, err := NextID(nil, dir); err != nil || id != 13 {
		t.Fatalf("NextID = %d, %v; want 13 (unresolved marker 12)", id, err)
	}
}

// A staged handle reads back only as the handle of its own checkpoint and participant; a damaged or misplaced
// file is XX001 naming it.
func TestStagedHandleReadsBackOnlyInItsPlace(t *testing.T) {
	dir := t.TempDir()
	path := HandlePath(dir, 4, "sink-1")
	want := StagedHandle{ID: 4, Participant: "sink-1", Horizon: -17, Handle: []byte("txn")}
	if err := WriteStagedHandle(nil, path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadStagedHandle(nil, path, 4, "sink-1")
	if err != nil || got.ID != 4 || got.Participant != "sink-1" || got.Horizon != -17 || string(got.Handle) != "txn" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	for _, tc := range []struct {
		id uint64
		p  ParticipantID
	}{{5, "sink-1"}, {4, "sink-0"}} {
		if _, err := ReadStagedHandle(nil, path, tc.id, tc.p); err == nil {
			t.Fatalf("read as %s at %d", tc.p, tc.id)
		} else if c, ok := state.IsCorrupt(err); !ok || c.Path != path {
			t.Fatalf("want XX001 naming %s, got %v", path, err)
		}
	}
}
