package state

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// compactionGate is a store's pebble.CompactionScheduler: compactions run one at a time, as under Pebble's default
// scheduler, and stop lets Close cancel the store's background compaction safely.
//
// Why: Pebble (v2.1.7) caches a compaction it picked but had no permission to run, and runs it when a running one
// is done. A cancelled DB.Compact removes its manual compactions that have not started from Pebble's queue, but not
// from that cache; running the cached one then panics ("did not find manual compaction with id ...") on Pebble's
// scheduler goroutine, which takes the process down. Close therefore stops the gate first: once stop returns, no
// compaction is scheduled any more, so the cached one never runs, and the cancel is harmless. (Not cancelling
// at all costs a closing store the rest of its compaction: q9 and q20 20-25% more CPU.)
type compactionGate struct {
	db pebble.DBForCompaction // set by Register, before any other call

	mu      sync.Mutex
	running int
	stopped bool

	// granting is held while the gate hands a permission to the DB (grant), so that stop waits for one in flight.
	granting sync.Mutex
}

var _ pebble.CompactionScheduler = (*compactionGate)(nil)

func (g *compactionGate) Register(_ int, db pebble.DBForCompaction) { g.db = db }

// Unregister is called by the DB's Close; the gate is stopped by then (pebbleBackend.Close), or now.
func (g *compactionGate) Unregister() { g.stop() }

// TrySchedule is called by the DB, holding its mutex, when it wants to run a compaction.
func (g *compactionGate) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped || g.running >= 1 {
		return false, nil // the DB keeps the compaction for grant
	}
	g.running++
	return true, g
}

// UpdateGetAllowedWithoutPermission: the stores allow one compaction at a time whatever the DB's backlog, so a
// change of what the DB would allow changes nothing.
func (g *compactionGate) UpdateGetAllowedWithoutPermission() {}

// Done ends a compaction's permission (the DB calls it without holding its locks) and hands it to a waiting one.
func (g *compactionGate) Done() {
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
	g.grant()
}

func (g *compactionGate) Started()                                          {}
func (g *compactionGate) MeasureCPU(pebble.CompactionGoroutineKind)         {}
func (g *compactionGate) CumulativeStats(pebble.CompactionGrantHandleStats) {}

// grant runs the compactions the DB is waiting to run, while permissions are free and the gate is not stopped.
func (g *compactionGate) grant() {
	g.granting.Lock()
	defer g.granting.Unlock()
	for {
		g.mu.Lock()
		if g.stopped || g.running >= 1 {
			g.mu.Unlock()
			return
		}
		g.running++ // the permission Schedule hands on; the compaction's Done returns it
		g.mu.Unlock()
		if waiting, _ := g.db.GetWaitingCompaction(); !waiting || !g.db.Schedule(g) {
			g.mu.Lock()
			g.running--
			g.mu.Unlock()
			return
		}
	}
}

// stop ends the granting: once it returns, the gate neither grants nor is granting, so a compaction Pebble keeps
// for later never runs.
func (g *compactionGate) stop() {
	g.granting.Lock()
	defer g.granting.Unlock()
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
}
