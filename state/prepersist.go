package state

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"
)

// Pre-persists: a store that hands over many runs between two checkpoints (the group aggregate writes its working
// set back whenever it outgrows its bound) writes them as delta tables in the background during the interval, so
// that the checkpoint's Persist sorts and writes only what changed since the last of them. See doc.go.
//
// A pre-persist covers a contiguous part of the interval's dirty layers (all frozen: immutable). Capture hands the
// interval's pre-persists to its snapshot, whose Persist waits for them and, when the snapshot is the only one its
// delta holds (every earlier one persisted), names their tables in the listing before its own delta's, which holds
// the snapshot's layers after the last pre-persist. Otherwise (an earlier snapshot failed or was released, so the
// delta must hold its entries too, and they are older than the pre-persisted ones) it writes everything as before
// and deletes the pre-persisted tables. A pre-persist that failed fails that Persist.

// prePersistEntries is how many entries the dirty runs not pre-persisted yet hold before a pre-persist starts (a
// variable for tests; 0 turns pre-persists off).
var prePersistEntries = 1 << 18

var prePersistSeq atomic.Uint64

// prePersist is one background write of dirty layers as a delta.
type prePersist struct {
	layers []layer // oldest first
	done   chan struct{}
	// Set before done is closed:
	paths []string // one per stripe with entries, in stripe order; written, fsync'd and their directory synced
	sums  []fileSum
	bytes int64
	err   error
}

// notePrePersist counts a new dirty layer and starts a pre-persist once enough entries wait and none is running.
// Operator goroutine only (writeRun).
func (b *pebbleBackend) notePrePersist(entries int) {
	if prePersistEntries <= 0 {
		return
	}
	b.preEntries += entries
	if b.preEntries < prePersistEntries {
		return
	}
	if p := b.lastPre; p != nil {
		select {
		case <-p.done:
		default:
			return // at most one in flight
		}
	}
	p := &prePersist{layers: b.dirtyRuns[b.preFrom:len(b.dirtyRuns):len(b.dirtyRuns)], done: make(chan struct{})}
	b.preFrom, b.preEntries = len(b.dirtyRuns), 0
	b.pres = append(b.pres, p)
	b.lastPre = p
	b.preWG.Add(1)
	go func() {
		defer b.preWG.Done()
		defer close(p.done)
		p.err = b.runPrePersist(p)
	}()
}

// runPrePersist sorts p's layers and writes them as delta tables, fsync'd, with their directory synced.
func (b *pebbleBackend) runPrePersist(p *prePersist) error {
	b.persistMu.Lock()
	defer b.persistMu.Unlock()
	b.mu.Lock()
	closed := b.closed
	ferr := b.fault.get()
	b.mu.Unlock()
	if closed {
		return errClosed
	}
	if ferr != nil {
		return b.pebbleErr("pre-persist", ferr)
	}
	if err := prePersistFault; err != nil {
		return err
	}
	release := b.pacer().hold()
	defer release()
	c, order := collectSorted([]*pebbleSnapshot{{layers: p.layers}})
	if len(order) == 0 {
		return nil
	}
	b.chooseStripes(c, order)
	name := fmt.Sprintf("p%d.%d", time.Now().UnixNano(), prePersistSeq.Add(1))
	paths, err := b.writeTables(filepath.Join(b.shared, name), c, order)
	release()
	if err != nil {
		return fmt.Errorf("state: pre-persist: %w", err)
	}
	// Registered before persistMu is released: a re-base's garbage collection (under persistMu) keeps them.
	b.mu.Lock()
	for _, path := range paths {
		b.preFiles[path] = true
	}
	b.mu.Unlock()
	p.paths = paths
	if FsyncEnabled() {
		if err := syncDir(b.fsys, b.shared); err != nil {
			return fmt.Errorf("state: pre-persist: fsync %s: %w", b.shared, err)
		}
	}
	for _, path := range paths {
		sum, err := sumFile(b.fsys, path, true)
		if err != nil {
			return fmt.Errorf("state: pre-persist: %w", err)
		}
		p.sums = append(p.sums, sum)
		p.bytes += sum.size
	}
	return nil
}

// prePersistFault, when set, fails every pre-persist (tests).
var prePersistFault error

// waitPrePersists waits for the pre-persists of every pending snapshot up to s (Persist, before persistMu: a
// pre-persist takes it).
func (b *pebbleBackend) waitPrePersists(s *pebbleSnapshot) {
	b.mu.Lock()
	var ps []*prePersist
	for _, q := range b.pending {
		ps = append(ps, q.pres...)
		if q == s {
			break
		}
	}
	b.mu.Unlock()
	for _, p := range ps {
		<-p.done
	}
}

// dropPrePersists deletes the tables of pre-persists that no listing names. Caller holds persistMu.
func (b *pebbleBackend) dropPrePersists(ps []*prePersist) {
	for _, p := range ps {
		b.mu.Lock()
		for _, path := range p.paths {
			delete(b.preFiles, path)
		}
		b.mu.Unlock()
		for _, path := range p.paths {
			_ = b.fsys.Remove(path)
		}
	}
}

// isPrePersistFile says whether a delta table was written by a pre-persist (p<time>.<seq>[-<stripe>].sst): it
// does not count as a checkpoint of the chain.
func isPrePersistFile(base string) bool {
	return len(base) > 1 && base[0] == 'p' && base[1] >= '0' && base[1] <= '9'
}

// wait waits for p, if any (tests).
func (p *prePersist) wait() {
	if p != nil {
		<-p.done
	}
}
