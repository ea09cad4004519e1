package state

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// compactionPacer makes a store's background compaction yield the CPU to its persists. The compaction (a
// rewrite of the whole store, seconds of CPU at tens of millions of keys) and a persist (what a checkpoint waits
// for) otherwise share the machine's cores with the operator, and a persist that runs beside a compaction took
// about twice as long: the checkpoints that ran beside one were the slow ones. So while a persist sorts and writes
// its delta, every write of a compaction output table waits (Pebble's compaction writes through the store's vfs,
// and its writes are a few tens of KB apart), for at most maxCompactionPause per persist: a store whose persists
// run back to back still compacts. Only the CPU-heavy part of a persist holds the pacer, never a call into Pebble,
// so nothing Pebble does waits for a compaction that waits for us.
type compactionPacer struct {
	mu    sync.Mutex
	cond  *sync.Cond
	held  int       // persists in their heavy part
	until time.Time // the compaction waits until then at most (the current hold's start + maxCompactionPause)
}

const maxCompactionPause = time.Second

func newCompactionPacer() *compactionPacer {
	p := &compactionPacer{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// hold pauses the compaction's writes until the returned function is first called (or maxCompactionPause has
// passed).
func (p *compactionPacer) hold() (release func()) {
	if p == nil {
		return func() {}
	}
	p.mu.Lock()
	if p.held == 0 {
		p.until = time.Now().Add(maxCompactionPause)
	}
	p.held++
	p.mu.Unlock()
	released := false
	return func() { // idempotent: a caller releases early and defers it too
		if released {
			return
		}
		released = true
		p.mu.Lock()
		p.held--
		if p.held == 0 {
			p.cond.Broadcast()
		}
		p.mu.Unlock()
	}
}

// wait blocks while a persist holds the pacer, up to the hold's deadline.
func (p *compactionPacer) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == 0 {
		return
	}
	d := time.Until(p.until)
	if d <= 0 {
		return
	}
	t := time.AfterFunc(d, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer t.Stop()
	for p.held > 0 && time.Now().Before(p.until) {
		p.cond.Wait()
	}
}

// compactionCategory is the write category Pebble gives the tables its compactions write.
const compactionCategory vfs.DiskWriteCategory = "pebble-compaction"

// pacedFile is a compaction output table: each write waits for the pacer first.
type pacedFile struct {
	vfs.File
	p *compactionPacer
}

func (f pacedFile) Write(b []byte) (int, error) {
	f.p.wait()
	return f.File.Write(b)
}

func (f pacedFile) WriteAt(b []byte, off int64) (int, error) {
	f.p.wait()
	return f.File.WriteAt(b, off)
}
