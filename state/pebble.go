package state

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/clinksql/clinksql/internal/sysmem"
)

var defaultCacheBytes atomic.Int64

// DefaultCacheBytes is a Pebble store's in-memory budget when Options.CacheBytes is 0: what SetDefaultCacheBytes
// set, else 1/32 of the machine's memory, between 64 MB and 1 GB.
func DefaultCacheBytes() int64 {
	if n := defaultCacheBytes.Load(); n > 0 {
		return n
	}
	return min(max(sysmem.Total()/32, 64<<20), 1<<30)
}

// SetDefaultCacheBytes sets DefaultCacheBytes for the stores opened after it (the server's state cache setting);
// n <= 0 goes back to sizing it from the machine. The shared block cache is sized from it once, when the first
// store opens.
func SetDefaultCacheBytes(n int64) { defaultCacheBytes.Store(max(n, 0)) }

var errClosed = errors.New("state: backend closed")

// sharedBlockCache is one Pebble block cache for every store in the process: many small stores should not each
// reserve their own. Half the default budget, at least 64 MB: it must hold the tables' index and filter blocks (a
// delta's filter is one block of about 1.25 MB per million keys; reading it again for a lookup costs far more than
// the lookup), and the data blocks of the keys being read.
var sharedBlockCache = sync.OnceValue(func() *pebble.Cache {
	return pebble.NewCache(max(64<<20, DefaultCacheBytes()/2))
})

// OpenPebble opens keyed state in a Pebble store at opts.Dir behind a write-back cache. The working directory is
// scratch: it is rebuilt on every open, from opts.RestorePath if set (immutable sstables hard-linked, everything else
// copied) and empty otherwise. Durability comes only from Snapshot.Persist.
func OpenPebble(opts Options) (Backend, error) {
	if opts.Dir == "" {
		return nil, errors.New("state: OpenPebble needs Options.Dir")
	}
	fsys := orOS(opts.FS)
	if err := resetWorkDir(fsys, opts.Dir); err != nil {
		return nil, err
	}
	shared := opts.SharedDir
	if shared == "" {
		shared = opts.Dir + ".shared"
	}
	if err := fsys.MkdirAll(shared); err != nil {
		return nil, fmt.Errorf("state: open %s: %w", shared, err)
	}
	var restored chainSpec
	if opts.RestorePath != "" {
		var err error
		if restored, err = readChain(fsys, opts.RestorePath); err != nil {
			return nil, restoreErr(opts.RestorePath, err)
		}
		if err := verifyChain(fsys, opts.RestorePath, restored); err != nil {
			return nil, err
		}
		if restored.base != "" {
			if err := linkOrCopyStore(fsys, restored.base, opts.Dir); err != nil {
				return nil, restoreErr(restored.base, err)
			}
		}
	}
	fault := &storeFault{dir: opts.Dir}
	popts := pebbleOptions(restored.base != "", fault, opts.PebbleFS)
	db, err := pebble.Open(opts.Dir, popts)
	if err == nil {
		err = fault.get()
		if err != nil {
			db.Close()
		}
	}
	if err != nil {
		if opts.RestorePath != "" {
			return nil, restoreErr(cmp.Or(restored.base, opts.RestorePath), err)
		}
		return nil, fmt.Errorf("state: open %s: %w", opts.Dir, err)
	}
	// The deltas in order: each ingest gets newer sequence numbers, so a later delta shadows an earlier one.
	for _, d := range restored.deltas {
		if err := ingestShared(fsys, db, opts.Dir, d); err != nil {
			if ferr := fault.get(); ferr != nil {
				err = ferr
			}
			db.Close()
			return nil, restoreErr(d, err)
		}
	}
	limit := opts.CacheBytes
	if limit <= 0 {
		limit = DefaultCacheBytes()
	}
	if err := fault.get(); err != nil {
		db.Close()
		return nil, restoreErr(cmp.Or(restored.base, opts.RestorePath, opts.Dir), err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	b := &pebbleBackend{
		compactCtx:    cctx,
		compactCancel: cancel,
		filter:        newKeyFilter(),
		fault:         fault,
		fsys:          fsys,
		dir:           opts.Dir,
		shared:        shared,
		liveSnapshots: opts.LiveSnapshots,
		chain:         restored,
		popts:         popts,
		db:            db,
		dirty:         newMemtable(),
		reads:         make(map[string][]byte),
		preFiles:      make(map[string]bool),
		cacheLimit:    limit,
	}
	b.maybeCompact() // the restored deltas are in L0
	if restored.base == "" && len(restored.deltas) == 0 {
		b.filterReady = true // an empty store: the filter sees every key that reaches Pebble
	} else if restoreFilter {
		b.compactWG.Add(1)
		go b.buildFilter()
	}
	return b, nil
}

// restoreFilter turns on buildFilter; a test that damages a restored table turns it off, since the background
// read would put the table's blocks in the block cache before the damage.
var restoreFilter = true

// buildFilter adds the keys of a restored store to a filter of their own, in the background; the operator
// goroutine merges it into the store's filter at its next lookup (absent). Until then every lookup that the
// in-memory layers do not answer goes to Pebble. Keys written after the open are in the store's filter already.
func (b *pebbleBackend) buildFilter() {
	defer b.compactWG.Done()
	it, err := b.db.NewIter(nil)
	if err != nil {
		return // no filter: lookups keep going to Pebble
	}
	defer it.Close()
	f := newKeyFilter()
	add, done := f.adder()
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		add(it.Key())
		if n++; n%4096 == 0 && b.compactCtx.Err() != nil {
			return
		}
	}
	done() // before the filter is published: adds are applied in chunks
	if it.Error() == nil {
		b.built.Store(f)
	}
}

// absent reports whether the key filter rules key out: it is in no layer under the dirty map. Operator goroutine
// only.
func (b *pebbleBackend) absent(key []byte) bool {
	return b.filterOn() && !b.filter.mayContain(key)
}

// filterOn reports whether the key filter holds every key of the layers under the dirty map (a restored store's
// filter is built in the background). Operator goroutine only.
func (b *pebbleBackend) filterOn() bool {
	if !b.filterReady {
		f := b.built.Load()
		if f == nil {
			return false
		}
		b.filter.gens = append(slices.Clip(f.gens), b.filter.gens...)
		b.filter.bytes.Add(f.bytes.Load())
		b.filterReady = true
	}
	return true
}

// compactEnd is past every key a store holds (operator keys start 0xFF 0xFF; nothing has 64 more).
var compactEnd = bytes.Repeat([]byte{0xFF}, 66)

// maybeCompact starts a compaction of the whole store into one level, in the background, when L0 holds at least
// as many bytes as the levels below (and 16 MB), or maxL0Sublevels sublevels; unless one is running. See
// pebbleOptions.
func (b *pebbleBackend) maybeCompact() {
	if !b.compacting.CompareAndSwap(false, true) {
		return
	}
	m := b.db.Metrics()
	var below int64
	for _, l := range m.Levels[1:] {
		below += l.TablesSize
	}
	if l0 := m.Levels[0]; l0.TablesCount == 0 || (l0.TablesSize < max(below, 16<<20) && l0.Sublevels < maxL0Sublevels) {
		b.compacting.Store(false)
		return
	}
	b.compactWG.Add(1)
	go func() {
		defer b.compactWG.Done()
		defer b.compacting.Store(false)
		// One compaction per range of overlapping tables, that is per stripe (writeTables), one after the other:
		// Close stops the store's compaction gate, then cancels the ones not started and waits for the running
		// one only (compactgate.go says why in that order). An error that matters (I/O, corruption) reaches the
		// store's fault through Pebble's event listener; a cancelled compaction is none.
		_ = b.db.Compact(b.compactCtx, []byte{}, compactEnd, true)
	}()
}

// maxL0Sublevels is how many sublevels L0 holds before a compaction of the whole store, whatever its bytes: 96
// since pre-persists (prepersist.go) write two or three deltas per checkpoint, each a sublevel (at 48 the store
// compacted every 15-20 s over 50M new keys, 2.6 s more CPU than at one delta per checkpoint, of 50 s).
const maxL0Sublevels = 96

// pacer is what the store's compactions yield to (pace.go).
func (b *pebbleBackend) pacer() *compactionPacer {
	g, _ := b.popts.FS.(fsyncGateFS)
	return g.pace
}

// pebbleOptions tunes Pebble for many small stores per process. Writes reach Pebble only as ingested sstables
// (see ingestUnflushed), so the memtable stays empty and small, and the WAL is off: the working store is never reopened
// after a crash (a restart restores from a checkpoint), and a checkpoint is made of sstables only.
func pebbleOptions(mustExist bool, fault *storeFault, fsys vfs.FS) *pebble.Options {
	if fsys == nil {
		fsys = vfs.Default
	}
	o := &pebble.Options{
		FS:                  fsyncGateFS{FS: fsys, pace: newCompactionPacer()},
		Cache:               sharedBlockCache(),
		MemTableSize:        1 << 20,
		DisableWAL:          true,
		MaxManifestFileSize: 1 << 20, // every checkpoint copies the MANIFEST: keep it short
		// Lookups that get past the key filter touch a table per L0 sublevel and stripe: keep them open (a
		// table opened again per lookup costs a syscall and a read of its footer, index and properties).
		MaxOpenFiles: 1024,
		// Row-based sstables (Pebblev4, the newest table format of this format version): for small keyed-state
		// entries they cost about half the CPU of columnar blocks to write, and compactions about a third less
		// (measured on 60k-100k entries of 16+64 bytes); nothing here needs the newer formats' features.
		FormatMajorVersion: pebble.FormatFlushableIngestExcises,
		Logger:             pebbleLogger{fault},
		EventListener:      fault.listener(),
		ErrorIfNotExists:   mustExist,
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10) // Get of a key that is not there stays cheap
	}
	// Every checkpoint ingests one delta that spans the whole key space (keys start with a hashed key group), so
	// it lands in L0 and any compaction out of L0 rewrites all of the level below. Pebble's own policy (compact L0
	// once it holds a few tables) then rewrites the whole store every few checkpoints: its cost grows with the
	// state held, not with what changed. maybeCompact instead compacts everything into one level once L0 holds as
	// many bytes as the rest (or too many tables): each compaction at most doubles the store it rewrites, so an
	// entry is rewritten about twice in all. Reads pay for the deeper L0 only for the keys the key filter lets
	// through.
	o.DisableAutomaticCompactions = true // maybeCompact decides
	// One compaction at a time, and a scheduler that Close can stop before it cancels one (compactgate.go).
	o.Experimental.CompactionScheduler = &compactionGate{}
	o.L0StopWritesThreshold = 1000 // nothing is written through the memtable: never stall an ingest
	o.LBaseMaxBytes = 1 << 30
	// Compactions write large tables (64 MB in Lbase): far fewer tables to keep open and to look a key up in.
	o.TargetFileSizes[0] = 32 << 20
	o.EnsureDefaults() // writeTables's sstable writer needs the resolved options
	return o
}

type pebbleBackend struct {
	fault *storeFault // once set, every operation fails with it (pebblefault.go)
	// filter holds every key of every layer under the dirty map (keyfilter.go): a key it rejects is in none of
	// them, so a lookup skips them all. It answers (filterReady) at once for a store opened empty, and for a
	// restored one once buildFilter has read the restored keys (built). Operator goroutine only.
	filter      *keyFilter
	filterReady bool
	built       atomic.Pointer[keyFilter]
	fsys        FS
	dir         string
	// shared holds the files persisted snapshots are made of; chain is what the newest one is made of, and
	// unflushed the deltas persisted since but not yet ingested into Pebble (their snapshots are still pending).
	shared        string
	liveSnapshots func() ([]string, error)
	chain         chainSpec
	unflushed     []deltaFile
	stripes       [][]byte // the first key of each stripe after the first (writeTables); nil: none yet
	popts         *pebble.Options
	db            *pebble.DB
	dirty         *memtable // operator goroutine only
	// dirtyRuns: the layers WriteBatch added since the last Capture, oldest first, and the memtables they froze
	// (a batch lands after the Puts before it, so those move into a layer under it); dirty is newer than all.
	dirtyRuns  []layer
	cacheLimit int64
	missBuf    []int32  // GetMany's scratch (operator goroutine only)
	hashBuf    []uint64 // GetMany's key filter hashes (operator goroutine only)
	hitBuf     []found
	// Pre-persists (prepersist.go), operator goroutine only: this interval's, in order; the first dirty layer
	// none of them covers and the entries from it on; the newest started (any interval).
	pres       []*prePersist
	preFrom    int
	preEntries int
	lastPre    *prePersist
	preWG      sync.WaitGroup // the pre-persists' goroutines; Close waits for them

	persistMu sync.Mutex     // one Persist (or background ingest) at a time; Close waits for it
	ingestWG  sync.WaitGroup // ingestLater's goroutines; Close waits for them
	bgErr     error          // what the last background ingest or re-base failed with (mu)

	// The background compaction (maybeCompact): at most one; Close cancels it and waits.
	compacting    atomic.Bool
	compactCtx    context.Context
	compactCancel context.CancelFunc
	compactWG     sync.WaitGroup

	// The clean cache holds only values equal to Pebble's: the memtables of the last few persisted snapshots
	// (kept whole, so a persist costs no per-entry work) and values Get read from Pebble. Both count against
	// cacheLimit; the oldest generation goes first.
	mu        sync.Mutex
	pending   []*pebbleSnapshot // captured, not yet in Pebble, in capture order
	gens      []layer           // persisted, oldest first
	genBytes  int64
	reads     map[string][]byte // read from Pebble; never holds a key that some generation holds
	preFiles  map[string]bool   // tables of pre-persists that no listing names yet: garbage collection keeps them
	readBytes int64
	closed    bool
}

// checkOpen is the error of a lookup the in-memory layers answered: the store is closed or failed.
func (b *pebbleBackend) checkOpen() error {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return errClosed
	}
	if err := b.fault.get(); err != nil {
		return b.pebbleErr("get", err)
	}
	return nil
}

// maxCleanGens bounds how many persisted memtables Get may have to look through.
const maxCleanGens = 4

// getDirtyRuns looks key up in the layers WriteBatch added since the last Capture. Operator goroutine only.
func (b *pebbleBackend) getDirtyRuns(key []byte) (entry, bool) {
	for i := len(b.dirtyRuns) - 1; i >= 0; i-- {
		if e, ok := b.dirtyRuns[i].get(key); ok {
			return e, true
		}
	}
	return entry{}, false
}

// getPending looks key up in the pending snapshots, newest first. Caller holds mu.
func (b *pebbleBackend) getPending(key []byte) (entry, bool) {
	for i := len(b.pending) - 1; i >= 0; i-- {
		ls := b.pending[i].layers
		for j := len(ls) - 1; j >= 0; j-- {
			if e, ok := ls[j].get(key); ok {
				return e, true
			}
		}
	}
	return entry{}, false
}

func (b *pebbleBackend) Get(key []byte) ([]byte, bool, error) {
	if e, ok := b.dirty.get(key); ok {
		return e.v, !e.del, nil
	}
	if b.absent(key) {
		return nil, false, b.checkOpen()
	}
	if e, ok := b.getDirtyRuns(key); ok {
		return e.v, !e.del, nil
	}
	b.mu.Lock()
	if e, ok := b.getPending(key); ok {
		b.mu.Unlock()
		return e.v, !e.del, nil
	}
	for i := len(b.gens) - 1; i >= 0 && !unindexed(b.gens[i]); i-- {
		if e, ok := b.gens[i].get(key); ok {
			b.mu.Unlock()
			return e.v, !e.del, nil
		}
	}
	if v, ok := b.reads[string(key)]; ok {
		b.mu.Unlock()
		return v, true, nil
	}
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, false, errClosed
	}
	if err := b.fault.get(); err != nil {
		return nil, false, b.pebbleErr("get", err)
	}
	// Safe outside the lock: a concurrent Persist only applies snapshots that were pending above, and none of them
	// holds key, so Pebble's value for key does not change under us.
	v, closer, err := b.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, b.pebbleErr("get", err)
	}
	val := slices.Clone(v)
	closer.Close()
	b.mu.Lock()
	if !b.closed {
		if _, ok := b.reads[string(key)]; !ok {
			b.reads[string(key)] = val
			b.readBytes += int64(len(key) + len(val) + memEntryOverhead)
			b.evict()
		}
	}
	b.mu.Unlock()
	return val, true, nil
}

func (b *pebbleBackend) Put(key, value []byte) {
	b.dirty.set(key, entry{v: value})
}

func (b *pebbleBackend) Delete(key []byte) { b.dirty.set(key, entry{del: true}) }

func (b *pebbleBackend) Scan(prefix []byte, fn func(key, value []byte) error) error {
	// Take the pending list before opening the Pebble iterator: a snapshot that Persist applies in between is then
	// seen in both layers (same values) rather than in neither.
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errClosed
	}
	pend := slices.Clone(b.pending)
	b.mu.Unlock()
	if err := b.fault.get(); err != nil {
		return b.pebbleErr("scan", err)
	}

	cs := make([]cursor, 0, len(pend)+len(b.dirtyRuns)+2)
	b.dirty.prepareScan()
	cs = append(cs, b.dirty.iter(prefix))
	for i := len(b.dirtyRuns) - 1; i >= 0; i-- {
		b.dirtyRuns[i].prepareScan()
		cs = append(cs, b.dirtyRuns[i].scan(prefix))
	}
	for i := len(pend) - 1; i >= 0; i-- {
		ls := pend[i].layers
		for j := len(ls) - 1; j >= 0; j-- {
			ls[j].prepareScan() // the index is operator-goroutine state; Persist never reads it
			cs = append(cs, ls[j].scan(prefix))
		}
	}
	var lower []byte
	if len(prefix) > 0 { // an empty non-nil bound trips a Pebble invariant check in race builds
		lower = prefix
	}
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return b.pebbleErr("scan", err)
	}
	it.First()
	cs = append(cs, pebbleCursor{it})
	err = mergeScan(cs, fn)
	if ierr := it.Error(); err == nil && ierr != nil { // an iterator that stopped on an error is not Valid
		err = ierr
	}
	if cerr := it.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil && (pebble.IsCorruptionError(err) || b.fault.get() != nil) {
		err = b.pebbleErr("scan", err)
	}
	return err
}

// Capture hands the dirty map to the snapshot and starts a new one: no copying, no disk.
func (b *pebbleBackend) Capture(id uint64) (Snapshot, error) {
	if len(b.dirty.m) > 0 {
		// From now on a lookup finds these keys below the dirty map only if the filter has them (the runs' keys
		// are in it already). Outside the lock: the filter and the dirty map are the operator goroutine's.
		add, done := b.filter.adder()
		b.dirty.eachKey(func(k string) { add(stringBytes(k)) })
		done()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errClosed
	}
	if err := b.fault.get(); err != nil {
		return nil, b.pebbleErr("capture", err)
	}
	n := len(b.dirty.m)
	s := &pebbleSnapshot{b: b, id: id, layers: b.dirtyRuns}
	if n > 0 || len(s.layers) == 0 {
		b.dirty.frozen = true
		s.layers = append(s.layers, b.dirty)
		// Size the next map like this one: growing a map from empty rehashes it several times on the per-row
		// path.
		b.dirty = &memtable{m: make(map[string]entry, min(n, 1<<20))}
	}
	b.dirtyRuns = nil
	s.pres, b.pres, b.preFrom, b.preEntries = b.pres, nil, 0, 0
	b.pending = append(b.pending, s)
	return s, nil
}

// writeRun adds a batch's run as the newest dirty layer (WriteBatch). Operator goroutine only.
func (b *pebbleBackend) writeRun(r *run) {
	if len(r.ents) == 0 {
		return
	}
	// Every layer under the dirty map has its keys in the filter.
	add, done := b.filter.adder()
	r.eachKey(func(k string) { add(stringBytes(k)) })
	if len(b.dirty.m) > 0 {
		b.dirty.eachKey(func(k string) { add(stringBytes(k)) })
	}
	done()
	entries := len(r.ents)
	if len(b.dirty.m) > 0 { // older than the batch: it moves under it
		entries += len(b.dirty.m)
		b.dirty.frozen = true
		b.dirtyRuns = append(b.dirtyRuns, b.dirty)
		b.dirty = newMemtable()
	}
	b.dirtyRuns = append(b.dirtyRuns, r)
	b.notePrePersist(entries)
}

func (b *pebbleBackend) Close() error {
	b.preWG.Wait()
	b.ingestWG.Wait() // no Persist runs during Close, so none starts another
	b.persistMu.Lock()
	defer b.persistMu.Unlock()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.pending, b.gens, b.reads, b.dirty, b.dirtyRuns = nil, nil, nil, newMemtable(), nil
	b.mu.Unlock()
	if g, ok := b.popts.Experimental.CompactionScheduler.(*compactionGate); ok {
		g.stop() // before the cancel: see compactionGate
	}
	b.compactCancel()
	b.compactWG.Wait()
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("state: close: %w", err)
	}
	return nil
}

// promote turns persisted layers into clean generations. Caller holds mu.
func (b *pebbleBackend) promote(ts []layer) {
	for _, t := range ts {
		// A read-cache entry for a key the generation holds would turn stale once the generation is evicted.
		if r, ok := t.(*run); ok && !r.indexed.Load() {
			if len(b.reads) > 0 { // no index to look the reads up in: walk the run instead
				t.eachKey(func(k string) {
					if v, ok := b.reads[k]; ok {
						b.dropRead(k, v)
					}
				})
			}
		} else if len(b.reads) < t.count() {
			for k, v := range b.reads {
				if _, ok := t.get(stringBytes(k)); ok {
					b.dropRead(k, v)
				}
			}
		} else if len(b.reads) > 0 {
			t.eachKey(func(k string) {
				if v, ok := b.reads[k]; ok {
					b.dropRead(k, v)
				}
			})
		}
		b.gens = append(b.gens, t)
		b.genBytes += t.size()
	}
	b.evict()
}

func (b *pebbleBackend) dropRead(k string, v []byte) {
	delete(b.reads, k)
	b.readBytes -= int64(len(k) + len(v) + memEntryOverhead)
}

// persistedBytes is the memory of the pending snapshots already persisted (waiting for their delta's ingest).
// Caller holds mu.
func (b *pebbleBackend) persistedBytes() int64 {
	var n int64
	for _, p := range b.pending {
		if !p.persisted {
			break
		}
		n += p.bytes()
	}
	return n
}

// evict keeps the clean cache within its bound, which is what the budget leaves after the persisted snapshots
// and the key filter: whole generations first, oldest first (what was not written for a few checkpoints is the
// coldest), then read-cache entries in map order, i.e. roughly at random. Caller holds mu.
func (b *pebbleBackend) evict() {
	limit := b.cacheLimit - b.persistedBytes()
	limit -= b.filter.bytes.Load()
	limit = max(limit, b.cacheLimit/8)
	for len(b.gens) > 0 && (len(b.gens) > maxCleanGens || b.genBytes+b.readBytes > limit) {
		b.genBytes -= b.gens[0].size()
		b.gens[0] = nil
		b.gens = b.gens[1:]
	}
	if b.readBytes <= limit {
		return
	}
	target := limit - limit/8
	for k, v := range b.reads {
		b.dropRead(k, v)
		if b.readBytes <= target {
			return
		}
	}
}

// deltaFile is one persisted delta and how many pending snapshots it holds ("" when they held nothing).
type deltaFile struct {
	paths []string // one per stripe that has entries (see chooseStripes)
	snaps int
	bytes int64
}

// chainCheckpoints is how many checkpoints wrote the deltas: a striped delta is several files, <id>-<n>.sst.
func chainCheckpoints(deltas []string) int {
	ids := map[string]bool{}
	for _, d := range deltas {
		if isPrePersistFile(filepath.Base(d)) {
			continue
		}
		id, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(d), ".sst"), "-")
		ids[id] = true
	}
	return len(ids)
}

// maxUnflushed bounds the persisted deltas kept in memory before they are ingested into Pebble.
const maxUnflushed = 8

type pebbleSnapshot struct {
	b      *pebbleBackend
	id     uint64
	layers []layer // oldest first
	// pres are the pre-persists of the interval that ends with s (prepersist.go); a prefix of layers. Set by
	// Capture, taken (under mu) by the Persist that writes s.
	pres []*prePersist
	// persisted is set (under b.mu) once a delta holding the snapshot is durable; it stays pending (in memory,
	// not in Pebble) until that delta is ingested.
	persisted bool
	// done is set (under b.mu) by Persist or Release. A released snapshot stays pending: its changes are still
	// the newest for their keys and reach Pebble with the next Persist.
	done bool
}

func (s *pebbleSnapshot) ID() uint64 { return s.id }

func (s *pebbleSnapshot) bytes() int64 {
	var n int64
	for _, l := range s.layers {
		n += l.size()
	}
	return n
}

func (s *pebbleSnapshot) Release() {
	s.b.mu.Lock()
	s.done = true
	s.b.mu.Unlock()
}

// Persist makes the state as of s durable as a chain (see chain.go): it writes the entries of the snapshots not
// persisted yet, up to s, as one delta sstable into the shared directory, then the chain's listing at path. The
// delta stays in memory and reaches Pebble later, a few checkpoints' worth at a time (ingestUnflushed), and every
// maxChainDeltas checkpoints the chain is re-based on a Pebble checkpoint.
func (s *pebbleSnapshot) Persist(path string) error {
	b := s.b
	b.waitPrePersists(s)
	b.ingestWG.Wait() // an ingest the previous Persist started goes first
	b.persistMu.Lock()
	defer b.persistMu.Unlock()

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errClosed
	}
	if err := b.fault.get(); err != nil {
		b.mu.Unlock()
		return b.pebbleErr("persist", err)
	}
	if err := b.bgErr; err != nil { // the background ingest or re-base failed: this checkpoint fails with it
		b.bgErr = nil
		b.mu.Unlock()
		return fmt.Errorf("state: persist snapshot %d: %w", s.id, err)
	}
	n := slices.Index(b.pending, s)
	if s.done || n < 0 {
		b.mu.Unlock()
		return fmt.Errorf("state: snapshot %d persisted or released already", s.id)
	}
	s.done = true
	first := 0
	for first < n && b.pending[first].persisted {
		first++
	}
	snaps := slices.Clone(b.pending[first : n+1])
	// The pre-persists of s name their tables in the listing when s is all the delta holds; otherwise (and when
	// one failed) they are dropped. Either way they are done with (waitPrePersists): a later Persist does not
	// look at them again.
	var pres, drop []*prePersist
	var preErr error
	for _, q := range snaps {
		for _, p := range q.pres {
			if p.err != nil && preErr == nil {
				preErr = p.err
			}
		}
		if q == s && len(snaps) == 1 {
			pres = q.pres
		} else {
			drop = append(drop, q.pres...)
		}
		q.pres = nil
	}
	b.mu.Unlock()

	if preErr != nil {
		b.dropPrePersists(append(drop, pres...))
		return fmt.Errorf("state: persist snapshot %d: %w", s.id, preErr)
	}
	b.dropPrePersists(drop)
	ok := false
	defer func() {
		if !ok {
			b.dropPrePersists(pres)
		}
	}()

	next := b.chain
	var preDeltas []deltaFile
	toWrite := snaps
	if len(pres) > 0 {
		covered := 0
		for _, p := range pres {
			covered += len(p.layers)
			if len(p.paths) == 0 {
				continue
			}
			for i, path := range p.paths {
				next = next.with(path, p.sums[i])
			}
			preDeltas = append(preDeltas, deltaFile{paths: p.paths, bytes: p.bytes})
		}
		toWrite = []*pebbleSnapshot{{layers: s.layers[covered:]}}
	}
	var delta deltaFile
	delta.snaps = len(snaps)
	release := b.pacer().hold()
	defer release()
	if c, order := collectSorted(toWrite); len(order) > 0 {
		b.chooseStripes(c, order)
		paths, err := b.writeTables(filepath.Join(b.shared, strconv.FormatUint(s.id, 10)), c, order)
		release()
		if err != nil {
			return fmt.Errorf("state: persist snapshot %d: %w", s.id, err)
		}
		if FsyncEnabled() {
			if err := syncDir(b.fsys, b.shared); err != nil {
				return fmt.Errorf("state: persist snapshot %d: fsync %s: %w", s.id, b.shared, err)
			}
		}
		for _, p := range paths {
			sum, err := sumFile(b.fsys, p, true)
			if err != nil {
				return fmt.Errorf("state: persist snapshot %d: %w", s.id, err)
			}
			delta.bytes += sum.size
			next = next.with(p, sum)
		}
		delta.paths = paths
	}
	if err := writeChain(b.fsys, path, next); err != nil {
		return fmt.Errorf("state: persist snapshot %d: %w", s.id, err)
	}
	b.mu.Lock()
	for _, p := range snaps {
		p.persisted = true
	}
	b.chain = next
	for _, p := range pres {
		for _, path := range p.paths {
			delete(b.preFiles, path) // the chain names them now
		}
	}
	ok = true
	b.unflushed = append(append(b.unflushed, preDeltas...), delta)
	// Persisted snapshots wait in memory so that a few deltas go into Pebble at once, but only up to a part of
	// the cache budget: a store whose every checkpoint changes a lot ingests each delta at once.
	flush := b.unflushedCheckpoints() >= maxUnflushed || b.persistedBytes() > b.cacheLimit/4
	rebase := chainCheckpoints(next.deltas) >= maxChainDeltas
	b.mu.Unlock()
	if flush || rebase {
		b.ingestLater(s.id, rebase)
	}
	return nil
}

// unflushedCheckpoints is how many Persists wrote the unflushed deltas (a pre-persist's holds no snapshot). Caller
// holds mu.
func (b *pebbleBackend) unflushedCheckpoints() int {
	n := 0
	for _, d := range b.unflushed {
		if d.snaps > 0 {
			n++
		}
	}
	return n
}

// ingestLater runs ingestUnflushed in the background, after Persist has returned: a checkpoint needs its delta
// durable, not in Pebble, so its ack does not wait for the ingest (the persisted snapshots stay pending, in memory,
// until it is done). With rebase it then re-bases the chain on the store as of snapshot id (rebase). The next
// Persist waits for it, and fails with its error if it failed.
func (b *pebbleBackend) ingestLater(id uint64, rebase bool) {
	b.ingestWG.Add(1)
	go func() {
		defer b.ingestWG.Done()
		b.persistMu.Lock()
		defer b.persistMu.Unlock()
		b.mu.Lock()
		closed := b.closed
		b.mu.Unlock()
		if closed {
			return
		}
		err := b.ingestUnflushed()
		if err == nil && rebase {
			err = b.rebase(id)
		}
		if err != nil {
			b.mu.Lock()
			b.bgErr = err
			b.mu.Unlock()
		}
	}()
}

// ingestUnflushed hands the persisted deltas to Pebble (Pebble links the files; the shared directory keeps its
// names) and only then drops their snapshots from the pending list, so a concurrent Get finds every key in one
// layer or the other.
func (b *pebbleBackend) ingestUnflushed() error {
	b.mu.Lock()
	files := slices.Clone(b.unflushed)
	b.mu.Unlock()
	count := 0
	for _, d := range files {
		if len(d.paths) > 0 {
			if err := ingestSharedAll(b.fsys, b.db, b.dir, d.paths); err != nil {
				return b.pebbleErr("ingest", err)
			}
		}
		count += d.snaps
	}
	b.maybeCompact()
	b.mu.Lock()
	defer b.mu.Unlock()
	var ts []layer
	for _, p := range b.pending[:count] {
		ts = append(ts, p.layers...)
	}
	b.pending = slices.Delete(b.pending, 0, count)
	b.unflushed = b.unflushed[len(files):]
	b.promote(ts)
	return nil
}

// ingestShared ingests a shared sstable without giving it up: Pebble removes the path it ingests, so it gets a
// scratch hard link in the working directory instead.
func ingestShared(fsys FS, db *pebble.DB, workDir, path string) error {
	return ingestSharedAll(fsys, db, workDir, []string{path})
}

// ingestSharedAll is ingestShared of several tables whose key ranges do not overlap (the stripes of one delta) in
// one Ingest: one edit of Pebble's MANIFEST, and one sync of it, instead of one per table.
func ingestSharedAll(fsys FS, db *pebble.DB, workDir string, paths []string) error {
	tmps := make([]string, len(paths))
	for i, path := range paths {
		tmps[i] = filepath.Join(workDir, ingestFile)
		if i > 0 {
			tmps[i] += "-" + strconv.Itoa(i)
		}
		_ = fsys.Remove(tmps[i])
		if err := fsys.Link(path, tmps[i]); err != nil {
			for _, t := range tmps[:i] {
				_ = fsys.Remove(t)
			}
			return fmt.Errorf("ingest %s: %w", path, err)
		}
	}
	if err := db.Ingest(context.Background(), tmps); err != nil {
		for _, t := range tmps {
			_ = fsys.Remove(t)
		}
		return fmt.Errorf("ingest %s: %w", strings.Join(paths, ", "), err)
	}
	return nil
}

// rebase makes a Pebble checkpoint of the store the base of a new chain: called with every delta up to snapshot id
// ingested and nothing newer (it holds persistMu), so the base is the state as of id. id's own listing names the old
// chain; the next Persist's names the new base and its own delta. Then files that neither the new chain nor any live
// snapshot names are deleted (id's listing is live: it exists).
func (b *pebbleBackend) rebase(id uint64) error {
	next := chainSpec{base: filepath.Join(b.shared, fmt.Sprintf("base-%d", id)), sums: map[string]fileSum{}}
	if err := b.checkpoint(next.base); err != nil {
		return b.pebbleErr("re-base", err)
	}
	if err := baseSums(b.fsys, next.base, next.sums); err != nil {
		return b.pebbleErr("re-base", err)
	}
	b.mu.Lock()
	b.chain = next
	b.mu.Unlock()
	b.collectGarbage()
	return nil
}

// collectGarbage deletes the shared files that neither the current chain nor any live snapshot names. Best
// effort: a file left behind costs disk, never correctness.
func (b *pebbleBackend) collectGarbage() {
	if b.liveSnapshots == nil {
		return
	}
	live, err := b.liveSnapshots()
	if err != nil {
		return
	}
	keep := map[string]bool{}
	b.mu.Lock()
	for f := range b.preFiles {
		keep[filepath.Clean(f)] = true
	}
	b.mu.Unlock()
	for _, f := range b.chain.files() {
		keep[filepath.Clean(f)] = true
	}
	for _, p := range live {
		c, err := readChain(b.fsys, p)
		if err != nil {
			return // a listing we cannot read may name anything: delete nothing
		}
		for _, f := range c.files() {
			keep[filepath.Clean(f)] = true
		}
	}
	entries, err := b.fsys.ReadDir(b.shared)
	if err != nil {
		return
	}
	for _, e := range entries {
		full := filepath.Join(b.shared, e.Name())
		if strings.HasPrefix(e.Name(), ".") || keep[full] {
			continue
		}
		_ = b.fsys.RemoveAll(full)
	}
}

// ingestFile is the name of the scratch links ingestSharedAll makes in the working directory; Pebble ignores names
// it did not make.
const ingestFile = "ingest.tmp"

// writeTables writes the entries of order into one sstable per stripe that has any (chooseStripes): prefix.sst
// when the store has no stripes, else prefix-<stripe>.sst. It returns the paths written, in stripe order.
//
// The stripes are independent tables, so they are written concurrently, up to GOMAXPROCS at a time: a persist
// (and with it the checkpoint that waits for it) takes about the longest stripe's time when cores are free. They
// stay snappy-compressed: uncompressed deltas were about 3.5 times the bytes, which cost more to write, checksum
// and compact than the compression saved (BenchmarkPersistDelta: 345 against 275 ms of CPU per 1M entries).
func (b *pebbleBackend) writeTables(prefix string, c *collected, order []sortKey) ([]string, error) {
	type segment struct {
		stripe     int
		start, end int
		path       string
		err        error
	}
	var segs []segment
	if len(b.stripes) == 0 {
		segs = append(segs, segment{start: 0, end: len(order), path: prefix + ".sst"})
	} else {
		lo := 0
		for stripe := 0; stripe <= len(b.stripes) && lo < len(order); stripe++ {
			hi := len(order)
			if stripe < len(b.stripes) {
				bound := b.stripes[stripe]
				hi = lo + sortSearch(len(order)-lo, func(i int) bool { return bytes.Compare(c.key(order[lo+i]), bound) >= 0 })
			}
			if hi > lo {
				segs = append(segs, segment{stripe: stripe, start: lo, end: hi, path: fmt.Sprintf("%s-%d.sst", prefix, stripe)})
			}
			lo = hi
		}
	}
	wopts := b.popts.MakeWriterOptions(0, b.db.TableFormat())
	workers := min(runtime.GOMAXPROCS(0), len(segs))
	var next atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var g gathered
			for {
				i := int(next.Add(1)) - 1
				if i >= len(segs) {
					return
				}
				s := &segs[i]
				s.err = b.writeTable(s.path, wopts, c, order[s.start:s.end], &g)
			}
		}()
	}
	wg.Wait()
	paths := make([]string, 0, len(segs))
	var firstErr error
	for _, s := range segs {
		if s.err != nil && firstErr == nil {
			firstErr = s.err
		}
		paths = append(paths, s.path)
	}
	if firstErr != nil {
		for _, p := range paths {
			_ = b.popts.FS.Remove(p)
		}
		return nil, firstErr
	}
	return paths, nil
}

func sortSearch(n int, f func(int) bool) int {
	i, j := 0, n
	for i < j {
		h := int(uint(i+j) >> 1)
		if !f(h) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// writeTable writes the entries of order (the newest of each key; order starts at a new key) as one sstable at
// path.
func (b *pebbleBackend) writeTable(path string, wopts sstable.WriterOptions, c *collected, order []sortKey, g *gathered) error {
	f, err := b.popts.FS.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), wopts)
	prev := sortKey{i: -1}
	for start := 0; start < len(order); start += gatherChunk {
		end := min(start+gatherChunk, len(order))
		c.gather(g, order[start:end], prev)
		prev = order[end-1]
		off := 0
		for _, e := range g.ents {
			k := g.buf[off : off+int(e.klen)]
			off += int(e.klen)
			var err error
			if e.vlen < 0 {
				err = w.Delete(k)
			} else {
				v := g.buf[off : off+int(e.vlen)]
				off += int(e.vlen)
				err = w.Set(k, v) // the writer copies both
			}
			if err != nil {
				w.Close()
				return fmt.Errorf("write %s: %w", path, err)
			}
		}
	}
	if err := w.Close(); err != nil { // syncs the file (when fsync is on) before Ingest links it
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Stripes: a delta is written as one table per stripe, a fixed range of key groups, so that a compaction out of
// L0 (maybeCompact) can run one stripe at a time: each is a fraction of the work, and Close, which must wait for
// a running compaction, waits for one stripe's at most. A store decides its stripes at the first delta of at
// least stripeMinEntries entries, from that delta's keys (stripes never change afterwards; after a restore they
// are decided again, which costs only some overlap between old and new tables).
const numStripes = 8

var stripeMinEntries = 1 << 18 // a variable for tests

// chooseStripes sets the stripe bounds from the quantiles of order's keys, cut to their key group.
func (b *pebbleBackend) chooseStripes(c *collected, order []sortKey) {
	if b.stripes != nil || len(order) < stripeMinEntries {
		return
	}
	var bounds [][]byte
	for i := 1; i < numStripes; i++ {
		k := c.key(order[i*len(order)/numStripes])
		bound := slices.Clone(k[:min(len(k), 2)])
		if len(bounds) == 0 || bytes.Compare(bound, bounds[len(bounds)-1]) > 0 {
			bounds = append(bounds, bound)
		}
	}
	b.stripes = bounds
}

// gatherChunk is how many entries writeTable copies into order at a time.
const gatherChunk = 4096

// checkpoint makes a durable copy of the store in dir. Pebble's Checkpoint hard-links the sstables (synced when
// Pebble wrote them), copies and fsyncs OPTIONS and MANIFEST, writes its marker files, and fsyncs the new directory
// and the parents it created. What it cannot know is our rename into place, so we fsync dir's parent after it.
func (b *pebbleBackend) checkpoint(dir string) error {
	parent := filepath.Dir(dir)
	tmp := filepath.Join(parent, "."+filepath.Base(dir)+".part")
	_ = b.fsys.RemoveAll(tmp) // leftover of a failed attempt; Checkpoint refuses an existing dir
	// No WithFlushedWAL: the WAL is off and the memtable empty, every write having been ingested.
	if err := b.db.Checkpoint(tmp); err != nil {
		return fmt.Errorf("checkpoint %s: %w", tmp, err)
	}
	if err := b.fsys.Rename(tmp, dir); err != nil {
		_ = b.fsys.RemoveAll(tmp)
		return err
	}
	if FsyncEnabled() {
		if err := b.fsys.SyncDir(parent); err != nil {
			return fmt.Errorf("fsync %s: %w", parent, err)
		}
	}
	return nil
}

// resetWorkDir empties the working directory, refusing to when it holds anything a Pebble store (or an ingest) does
// not write: a misconfigured Dir must not cost anyone their files.
func resetWorkDir(fsys FS, dir string) error {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("state: open %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() || !isStoreFile(e.Name()) {
			return fmt.Errorf("state: open %s: %q is not a Pebble file; refusing to remove the directory", dir, e.Name())
		}
	}
	if err := fsys.RemoveAll(dir); err != nil {
		return fmt.Errorf("state: open %s: %w", dir, err)
	}
	return nil
}

func isStoreFile(name string) bool {
	switch {
	case name == "LOCK", strings.HasPrefix(name, ingestFile):
		return true
	case strings.HasPrefix(name, "MANIFEST-"), strings.HasPrefix(name, "OPTIONS-"), strings.HasPrefix(name, "marker."):
		return true
	}
	for _, ext := range []string{".sst", ".blob", ".log", ".dbtmp"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// linkOrCopyStore rebuilds a working store from a persisted checkpoint: sstables and blob files are immutable and
// hard-linked (copied if the link fails, e.g. across devices); MANIFEST, OPTIONS and markers are copied because the
// opened store appends to or replaces them.
func linkOrCopyStore(fsys FS, from, to string) error {
	entries, err := fsys.ReadDir(from)
	if err != nil {
		return err
	}
	if err := fsys.MkdirAll(to); err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			return fmt.Errorf("unexpected directory %s in a persisted store", e.Name())
		}
		src, dst := filepath.Join(from, e.Name()), filepath.Join(to, e.Name())
		if strings.HasSuffix(e.Name(), ".sst") || strings.HasSuffix(e.Name(), ".blob") {
			if err := fsys.Link(src, dst); err == nil {
				continue
			}
		}
		if err := copyFile(fsys, src, dst); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(fsys FS, src, dst string) error {
	in, err := fsys.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fsys.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// fsyncGateFS makes Pebble's own fsyncs follow FsyncEnabled, so CLINK_STATE_FSYNC=0 turns off all of them
// (sstable writes, MANIFEST, checkpoints), not only ours.
type fsyncGateFS struct {
	vfs.FS
	pace *compactionPacer // the tables compactions write wait for it (pace.go)
}

func gate(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return fsyncGateFile{f}, nil
}

func (g fsyncGateFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := gate(g.FS.Create(name, c))
	if err == nil && c == compactionCategory && g.pace != nil {
		f = pacedFile{f, g.pace}
	}
	return f, err
}
func (g fsyncGateFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, o ...vfs.OpenOption) (vfs.File, error) {
	return gate(g.FS.OpenReadWrite(name, c, o...))
}
func (g fsyncGateFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return gate(g.FS.ReuseForWrite(old, name, c))
}
func (g fsyncGateFS) OpenDir(name string) (vfs.File, error) { return gate(g.FS.OpenDir(name)) }

type fsyncGateFile struct{ vfs.File }

func (f fsyncGateFile) Sync() error {
	if !FsyncEnabled() {
		return nil
	}
	return f.File.Sync()
}

func (f fsyncGateFile) SyncData() error {
	if !FsyncEnabled() {
		return nil
	}
	return f.File.SyncData()
}

func (f fsyncGateFile) SyncTo(length int64) (bool, error) {
	if !FsyncEnabled() {
		return false, nil
	}
	return f.File.SyncTo(length)
}

// restoreErr reports a failed restore of a persisted snapshot (path: its listing, a delta, or a base directory).
// The files of a completed checkpoint were whole when it completed, so anything but an I/O error of the machine
// (a system errno other than "not found": a full disk, EIO) means they are damaged: a *CorruptError naming the
// file, the one Pebble's message names inside a base directory when it names one.
func restoreErr(path string, err error) error {
	if _, ok := IsCorrupt(err); ok {
		return err
	}
	var errno syscall.Errno
	if !errors.Is(err, fs.ErrNotExist) && errors.As(err, &errno) {
		return fmt.Errorf("state: restore %s: %w", path, err)
	}
	named := path
	if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
		var pe *fs.PathError
		if m := pebbleFileName.FindString(err.Error()); m != "" {
			named = filepath.Join(path, m)
		} else if errors.As(err, &pe) {
			named = filepath.Join(path, filepath.Base(pe.Path))
		}
	} else if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		named = pe.Path
	}
	return Corrupt(named, err, "cannot restore a completed checkpoint from it: %v", err)
}

// pebbleFileName matches the names of a Pebble store's files in Pebble's messages.
var pebbleFileName = regexp.MustCompile(`\b(\d{6}\.(sst|blob)|MANIFEST-\d+|OPTIONS-\d+)\b`)

// pebbleErr reports an error of a Pebble operation. When Pebble recorded a fault for the store (pebblefault.go),
// that fault replaces err: it says why the store gave up. Pebble checks every block it reads against its checksum,
// and a mismatch becomes a *CorruptError naming the table. The working store's tables are hard links of the
// snapshot files in the shared directory, so the error names the shared file that is the same file, if there is one.
func (b *pebbleBackend) pebbleErr(op string, err error) error {
	if f := b.fault.get(); f != nil {
		err = f
	}
	path := b.fault.corruptPath()
	if !pebble.IsCorruptionError(err) && path == "" {
		return fmt.Errorf("state: %s: %w", op, err)
	}
	if path == "" {
		return Corrupt(b.dir, err, "%s: %v", op, err)
	}
	if fi, serr := b.fsys.Stat(path); serr == nil {
		for _, pattern := range []string{"*.sst", "*/*.sst"} {
			shared, _ := filepath.Glob(filepath.Join(b.shared, pattern))
			for _, sp := range shared {
				if si, serr := b.fsys.Stat(sp); serr == nil && os.SameFile(fi, si) {
					return Corrupt(sp, err, "%s: %v (read as %s)", op, err, path)
				}
			}
		}
	}
	return Corrupt(path, err, "%s: %v", op, err)
}
