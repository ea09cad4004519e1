package state

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// pins: a compaction's writes wait while a persist holds the pacer, and go on when it releases it; a release
// called twice counts once.
func TestCompactionPacerWaitsForRelease(t *testing.T) {
	p := newCompactionPacer()
	p.wait() // nothing held: returns at once
	release := p.hold()
	waited := make(chan struct{})
	go func() {
		p.wait()
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("wait returned while the pacer was held")
	case <-time.After(20 * time.Millisecond):
	}
	release()
	release()
	<-waited
	if p.held != 0 {
		t.Fatalf("held %d after release, want 0", p.held)
	}
}

// pins: the pause has a deadline, so a store whose persists run back to back still compacts.
func TestCompactionPacerPauseIsBounded(t *testing.T) {
	p := newCompactionPacer()
	release := p.hold()
	defer release()
	p.mu.Lock()
	p.until = time.Now().Add(10 * time.Millisecond)
	p.mu.Unlock()
	p.wait() // returns at the deadline although still held
}

// pins: the store's vfs hands Pebble's compactions a paced file, and nothing else.
func TestCompactionOutputIsPaced(t *testing.T) {
	o := pebbleOptions(false, &storeFault{}, vfs.NewMem())
	f, err := o.FS.Create("a.sst", compactionCategory)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(pacedFile); !ok {
		t.Fatalf("compaction output %T, want pacedFile", f)
	}
	f.Close()
	g, err := o.FS.Create("b.sst", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.(pacedFile); ok {
		t.Fatal("a table that is not a compaction's is paced")
	}
	g.Close()
}
