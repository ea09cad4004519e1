package state

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Concurrent durable writes into one directory share directory fsyncs, and every one of them still returns with
// its file in place: the group commit must not drop or reorder a caller.
func TestConcurrentDurableWritesShareDirSyncs(t *testing.T) {
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
	dirSyncs.mu.Lock()
	defer dirSyncs.mu.Unlock()
	if len(dirSyncs.dirs) != 0 {
		t.Fatalf("sync state left behind: %v", dirSyncs.dirs)
	}
}
