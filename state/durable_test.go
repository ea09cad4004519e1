package state

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// Pins the group commit of directory fsyncs: callers that arrive while a sync runs share the next round (fewer
// syncs than callers), and every caller returns only after a sync that started after its request.
func TestConcurrentSyncsShareRounds(t *testing.T) {
	g := newSyncGroup()
	var syncs atomic.Int64
	var requested sync.WaitGroup
	release := make(chan struct{})
	started := make(chan struct{})
	// The first caller's round is held until every other caller has asked.
	first := make(chan error)
	go func() {
		first <- g.do("d", func() error {
			if syncs.Add(1) == 1 {
				close(started)
				<-release
			}
			return nil
		})
	}()
	<-started
	const waiters = 16
	var wg sync.WaitGroup
	for range waiters {
		wg.Add(1)
		requested.Add(1)
		go func() {
			defer wg.Done()
			before := syncs.Load()
			requested.Done()
			if err := g.do("d", func() error { syncs.Add(1); return nil }); err != nil {
				t.Error(err)
			}
			if syncs.Load() <= before {
				t.Error("returned without a sync started after the request")
			}
		}()
	}
	requested.Wait()
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n >= waiters+1 {
		t.Fatalf("%d syncs for %d callers: nothing was shared", n, waiters+1)
	}
	if len(g.dirs) != 0 {
		t.Fatalf("sync state left behind: %v", g.dirs)
	}
}

// Concurrent durable writes into one directory all land.
func TestConcurrentDurableWritesAllLand(t *testing.T) {
	t.Setenv("CLINK_STATE_FSYNC", "1")
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := WriteFsyncRename(OS, filepath.Join(dir, string(rune('a'+i%26))+string(rune('0'+i/26))), []byte{byte(i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 32 {
		t.Fatalf("%d files, want 32: %v", len(entries), err)
	}
}
