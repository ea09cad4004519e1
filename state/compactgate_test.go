package state

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// pins: a store's compaction can be cancelled at any moment and the store closed, as pebbleBackend.Close does.
// Each round fills L0 with 24 tables over disjoint ranges (so Compact splits into several manual compactions, which
// run one at a time: a waiting one is picked and cached by Pebble), starts a Compact and cancels it after a varying
// delay. Under Pebble's own scheduler (o.Experimental.CompactionScheduler = nil, no stop) about every other run of
// the 300 rounds panics on Pebble's scheduler goroutine ("did not find manual compaction with id ..."), which kills
// the test binary; the gate stopped before the cancel never runs the cached compaction.
func TestCancelledCompactionThenClose(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	for r := range rounds {
		o := pebbleOptions(false, &storeFault{}, vfs.NewMem())
		db, err := pebble.Open("db", o)
		if err != nil {
			t.Fatal(err)
		}
		for f := range 24 { // flushed tables, each over its own key range
			b := db.NewBatch()
			for k := range 500 {
				key := fmt.Appendf(nil, "%02d-%06d", f, k)
				if err := b.Set(key, key, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Commit(pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = db.Compact(ctx, []byte{}, compactEnd, true)
		}()
		time.Sleep(time.Duration(r%50) * 100 * time.Microsecond) // cancel at a varying point of the compactions
		o.Experimental.CompactionScheduler.(*compactionGate).stop()
		cancel()
		<-done
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
